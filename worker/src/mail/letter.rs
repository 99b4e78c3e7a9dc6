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
use ticket_core::domain::{Language, ReservationStatus, VenueTimeZone};

use crate::mail::words::Words;

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
    let words = Words(Language::from_stored(&subject.language));
    let mut letter = Page {
        words,
        ..Page::default()
    };
    let seat_list = seats
        .iter()
        .map(|s| s.seat_number.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // In the venue's time: where the fan will be.
    let zone = VenueTimeZone::from_stored(&subject.time_zone);
    let when = |t: DateTime<Utc>| words.when(zone, t);
    let hold_end = subject.hold_expires_at.map(when).unwrap_or_default();
    let (order, title) = (subject.reservation_id.get(), subject.title.as_str());
    letter.line(&words.hello(&subject.nickname));
    let subject_line = match kind {
        MailKind::OrderConfirmation => {
            letter.line(&words.order_confirmed(order, title));
            words.order_confirmed_subject(title)
        }
        MailKind::HoldReminder => {
            letter.line(&words.hold_reminder(title, &seat_list, &hold_end));
            words.hold_reminder_subject(title, &hold_end)
        }
        MailKind::WaitingListOffer => {
            letter.line(&words.waiting_list_offer(title, &seat_list, &hold_end));
            words.waiting_list_offer_subject(title)
        }
        MailKind::Refund => {
            let amount = match (subject.refunded, subject.refunded_currency.as_deref()) {
                (Some(amount), Some(code)) => Currency::from_stored(code)
                    .map(|c| Amount::from_stored(amount).display_in(c))
                    .unwrap_or_else(|| format!("{amount} {code}")),
                _ => words.your_payment(),
            };
            let why = if subject.cancelled_at.is_some() {
                words.concert_cancelled(title)
            } else if subject.status == ReservationStatus::Confirmed {
                words.tickets_refunded(order, title)
            } else {
                words.paid_too_late(order, title)
            };
            letter.line(&why);
            letter.line(&words.money_back(&amount));
            words.refund_subject(title)
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
            MailKind::OrderConfirmation => (words.your_tickets(), "#/me/tickets"),
            MailKind::Refund => (words.your_reservations(), "#/me"),
            MailKind::HoldReminder | MailKind::WaitingListOffer => {
                (words.confirm_on_the_page(), "#/me")
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
    words: Words,
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
        self.text
            .push_str(&format!("{}\n", self.words.seats_heading(seats.len())));
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
            let words = self.words.total();
            self.text.push_str(&format!("{words}: {total}\n"));
            self.html.push_str(&format!(
                "<tr><td colspan=\"2\"><b>{words}</b></td><td align=\"right\"><b>{}</b></td></tr>",
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
        let words = self.words;
        self.line(words.show_at_the_door());
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
                "<div style=\"margin:1em 0\"><p><b>{seat}</b> {category} \
                 ({ticket})</p><img src=\"cid:{cid}\" width=\"228\" height=\"228\" \
                 alt=\"{alt}\"><p style=\"font-family:monospace;\
                 font-size:10px;word-break:break-all\">{code}</p></div>",
                seat = escape(&words.seat(&seat.seat_number)),
                category = escape(seat.category.as_deref().unwrap_or("")),
                ticket = escape(&words.ticket(ticket.get())),
                alt = escape(&words.qr_alt(&seat.seat_number)),
                cid = escape(&cid),
            ));
            codes.push_str(&format!(
                "  {} ({}): {code}\n",
                seat.seat_number,
                words.ticket(ticket.get())
            ));
            self.images.push((cid, crate::mail::qr_png::png(&code)?));
        }
        self.text.push_str(words.ticket_codes());
        self.text.push('\n');
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
