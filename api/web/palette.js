// A price category's colour: the one its operator chose, else the page's
// palette by the category's position (then again).

const PALETTE = ["#1f6fb2", "#2e8540", "#0f7c80", "#a4243b", "#5f6b00", "#c2185b", "#795548", "#283593"];

/** The colour of `category`, the concert's category at `index`. */
export function colourOf(category, index) {
  return category?.colour || PALETTE[index % PALETTE.length];
}

/** A key's swatch in a colour (set through the CSSOM: the page's policy allows no inline style). */
export function paint(swatch, colour) {
  swatch.style.background = colour;
  swatch.style.borderColor = colour;
  return swatch;
}
