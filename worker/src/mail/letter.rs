//! What a mail says: a plain-text part and an HTML part (the same words),
//! and for an order its tickets' QR codes as inline PNG images the HTML
//! shows by `cid:` (multipart/related inside multipart/alternative's HTML
//! side, as mail readers expect), each ticket's code also written out.

use chrono::{DateTime, Utc};
use lettre::Message;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use ticket_core::db::mails::{MailSeat, Subject};
use ticket_core::domain::mail::MailKind;
use ticket_core::domain::price::{Amount, Currency};
use ticket_core::domain::ticket_code::{TicketIdentity, TicketKeys};
use ticket_core::domain::{ReservationStatus, VenueTimeZone};

/// A mail composed, before it is addressed.
#[derive(Debug, Clone)]
pub struct Letter {
    pub subject: String,
    pub text: String,
    pub html: String,
    /// (Content-ID, PNG) of each inline image.
    pub images: Vec<(String, Vec<u8>)>,
}

/// What composing needs besides the reservation.
pub struct Stationery<'a> {
    pub keys: &'a TicketKeys,
    /// The box office's address, for links.
    pub public_url: Option<&'a str>,
    /// The sender's domain (Content-IDs are made in it).
    pub domain: &'a str,
}

/// Composes the `kind` mail about `subject`'s reservation and its `seats`.
pub fn compose(
    kind: MailKind,
    subject: &Subject,
    seats: &[MailSeat],
    stationery: &Stationery<'_>,
) -> Result<Letter, qrcode::types::QrError> {
    let mut letter = Page::default();
    let seat_list = seats
        .iter()
        .map(|s| s.seat_number.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // In the venue's time: where the fan will be.
    let zone = VenueTimeZone::from_stored(&subject.time_zone);
    let when = |t: DateTime<Utc>| zone.show(t);
    let hold_end = subject.hold_expires_at.map(when).unwrap_or_default();
    letter.line(&format!("Hello {},", subject.nickname));
    let subject_line = match kind {
        MailKind::OrderConfirmation => {
            letter.line(&format!(
                "your order {} for {} is confirmed.",
                subject.reservation_id, subject.title
            ));
            format!("Your tickets for {}", subject.title)
        }
        MailKind::HoldReminder => {
            letter.line(&format!(
                "your seats for {} ({seat_list}) are held for you until {hold_end}. Confirm them \
                 before then, or they go back on sale.",
                subject.title
            ));
            format!("Confirm your seats for {} by {hold_end}", subject.title)
        }
        MailKind::WaitingListOffer => {
            letter.line(&format!(
                "seats came back for {} and the waiting list has given them to you: {seat_list}, \
                 held for you until {hold_end}. Confirm them before then, or they go to the next \
                 fan in the list.",
                subject.title
            ));
            format!("Seats for {} are yours to confirm", subject.title)
        }
        MailKind::Refund => {
            let amount = match (subject.refunded, subject.refunded_currency.as_deref()) {
                (Some(amount), Some(code)) => Currency::from_stored(code)
                    .map(|c| Amount::from_stored(amount).display_in(c))
                    .unwrap_or_else(|| format!("{amount} {code}")),
                _ => "your payment".to_owned(),
            };
            let why = if subject.cancelled_at.is_some() {
                format!("{} is cancelled, and we are sorry.", subject.title)
            } else if subject.status == ReservationStatus::Confirmed {
                format!(
                    "tickets of your order {} for {} are refunded.",
                    subject.reservation_id, subject.title
                )
            } else {
                format!(
                    "your payment for order {} for {} arrived after your hold had ended, so no \
                     seat was sold for it.",
                    subject.reservation_id, subject.title
                )
            };
            letter.line(&why);
            letter.line(&format!(
                "{amount} goes back to the card you paid with; banks take 5-10 days to show it. \
                 A refunded ticket no longer admits anyone."
            ));
            format!("Refund for {}", subject.title)
        }
    };
    letter.line(&format!(
        "{}, {}",
        subject.venue,
        when(subject.concert_date)
    ));
    letter.seats(seats);
    if let Some(url) = stationery.public_url {
        let (what, path) = match kind {
            MailKind::OrderConfirmation => ("Your tickets", "#/me/tickets"),
            MailKind::Refund => ("Your reservations", "#/me"),
            MailKind::HoldReminder | MailKind::WaitingListOffer => {
                ("Confirm on the box office's page", "#/me")
            }
        };
        letter.link(what, &format!("{}/{path}", url.trim_end_matches('/')));
    }
    if kind == MailKind::OrderConfirmation {
        letter.tickets(subject, seats, stationery)?;
    }
    Ok(Letter {
        subject: subject_line,
        text: letter.text,
        html: format!(
            "<!DOCTYPE html><html><body style=\"font-family:sans-serif\">{}</body></html>",
            letter.html
        ),
        images: letter.images,
    })
}

/// The two parts written together.
#[derive(Default)]
struct Page {
    text: String,
    html: String,
    images: Vec<(String, Vec<u8>)>,
}

impl Page {
    fn line(&mut self, words: &str) {
        self.text.push_str(words);
        self.text.push_str("\n\n");
        self.html.push_str(&format!("<p>{}</p>", escape(words)));
    }

    fn link(&mut self, words: &str, url: &str) {
        self.text.push_str(&format!("{words}: {url}\n\n"));
        self.html.push_str(&format!(
            "<p><a href=\"{}\">{}</a></p>",
            escape(url),
            escape(words)
        ));
    }

    fn seats(&mut self, seats: &[MailSeat]) {
        let priced: Vec<Option<(Amount, Currency)>> = seats.iter().map(price_of).collect();
        self.text.push_str(&format!("Seats ({}):\n", seats.len()));
        self.html.push_str("<table cellpadding=\"4\">");
        for (seat, price) in seats.iter().zip(&priced) {
            let category = seat.category.as_deref().unwrap_or("");
            let price = price.map(|(a, c)| a.display_in(c)).unwrap_or_default();
            self.text
                .push_str(format!("  {}  {category}  {price}", seat.seat_number).trim_end());
            self.text.push('\n');
            self.html.push_str(&format!(
                "<tr><td><b>{}</b></td><td>{}</td><td align=\"right\">{}</td></tr>",
                escape(&seat.seat_number),
                escape(category),
                escape(&price)
            ));
        }
        let currencies: Vec<Currency> = priced.iter().flatten().map(|(_, c)| *c).collect();
        let total = match (priced.iter().all(Option::is_some), currencies.first()) {
            (true, Some(&currency)) if currencies.iter().all(|c| *c == currency) => {
                Some(Amount::total(priced.iter().flatten().map(|(a, _)| *a)).display_in(currency))
            }
            _ => None,
        };
        if let Some(total) = &total {
            self.text.push_str(&format!("Total: {total}\n"));
            self.html.push_str(&format!(
                "<tr><td colspan=\"2\"><b>Total</b></td><td align=\"right\"><b>{}</b></td></tr>",
                escape(total)
            ));
        }
        self.text.push('\n');
        self.html.push_str("</table>");
    }

    fn tickets(
        &mut self,
        subject: &Subject,
        seats: &[MailSeat],
        stationery: &Stationery<'_>,
    ) -> Result<(), qrcode::types::QrError> {
        self.line(
            "Show each seat's QR code at the door: one person a ticket, admitted once. The codes \
             are below, and on the box office's page under My tickets.",
        );
        let mut codes = String::new();
        for seat in seats {
            let (Some(ticket), Some(version)) = (seat.ticket_id, seat.ticket_version) else {
                continue;
            };
            let code = stationery.keys.sign(&TicketIdentity {
                ticket,
                concert: subject.concert_id,
                seat: seat.seat_id,
                version,
            });
            let cid = format!("ticket-{ticket}@{}", stationery.domain);
            self.html.push_str(&format!(
                "<div style=\"margin:1em 0\"><p><b>Seat {seat_number}</b> {category} \
                 (ticket {ticket})</p><img src=\"cid:{cid}\" width=\"228\" height=\"228\" \
                 alt=\"QR code of the ticket for seat {seat_number}\"><p style=\"font-family:monospace;\
                 font-size:10px;word-break:break-all\">{code}</p></div>",
                seat_number = escape(&seat.seat_number),
                category = escape(seat.category.as_deref().unwrap_or("")),
                cid = escape(&cid),
            ));
            codes.push_str(&format!(
                "  {} (ticket {ticket}): {code}\n",
                seat.seat_number
            ));
            self.images.push((cid, crate::mail::qr_png::png(&code)?));
        }
        self.text.push_str("Ticket codes:\n");
        self.text.push_str(&codes);
        Ok(())
    }
}

fn price_of(seat: &MailSeat) -> Option<(Amount, Currency)> {
    let currency = Currency::from_stored(seat.currency.as_deref()?)?;
    Some((Amount::from_stored(seat.price?), currency))
}

/// Text for HTML: the five characters that could end a text or attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The letter as a message from `from` to `to`, with `message_id` (without
/// its angle brackets).
pub fn message(
    letter: Letter,
    from: &Mailbox,
    to: Mailbox,
    message_id: &str,
) -> Result<Message, lettre::error::Error> {
    // A fixed, valid media type: parsing it cannot fail.
    let png = ContentType::parse("image/png").unwrap_or(ContentType::TEXT_PLAIN);
    let html_side = letter.images.into_iter().fold(
        MultiPart::related().singlepart(SinglePart::html(letter.html)),
        |related, (cid, image)| {
            related.singlepart(Attachment::new_inline(cid).body(image, png.clone()))
        },
    );
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(letter.subject)
        .message_id(Some(format!("<{message_id}>")))
        .date_now()
        .multipart(
            MultiPart::alternative()
                .singlepart(SinglePart::plain(letter.text))
                .multipart(html_side),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape(r#"<b>"Tom & Jerry's"</b>"#),
            "&lt;b&gt;&quot;Tom &amp; Jerry&#39;s&quot;&lt;/b&gt;"
        );
    }
}
