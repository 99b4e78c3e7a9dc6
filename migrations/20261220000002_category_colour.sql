-- A price category's colour (issue 48): what the seat map paints its
-- seats in and its key shows, chosen by the operator ("#c0392b"). NULL:
-- the page's palette by the category's position, as before.
ALTER TABLE price_categories
    ADD COLUMN colour CHAR(7) CHARACTER SET ascii COLLATE ascii_bin NULL;
