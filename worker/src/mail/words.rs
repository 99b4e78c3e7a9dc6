//! What a letter says, in the fan's language (the one kept on their
//! account): every sentence of a mail, in English and in Korean.

use chrono::{DateTime, Datelike as _, Timelike as _, Utc, Weekday};
use ticket_core::domain::{Language, VenueTimeZone};

/// The sentences of one language.
#[derive(Debug, Clone, Copy, Default)]
pub struct Words(pub Language);

use Language::{English, Korean};

impl Words {
    /// `at` in the venue's time: "Fri 1 May 2099, 19:00 KST",
    /// "2099년 5월 1일 (금) 19:00 KST".
    pub fn when(self, zone: VenueTimeZone, at: DateTime<Utc>) -> String {
        match self.0 {
            English => zone.show(at),
            Korean => {
                let local = zone.local(at);
                let day = match local.weekday() {
                    Weekday::Mon => "월",
                    Weekday::Tue => "화",
                    Weekday::Wed => "수",
                    Weekday::Thu => "목",
                    Weekday::Fri => "금",
                    Weekday::Sat => "토",
                    Weekday::Sun => "일",
                };
                format!(
                    "{}년 {}월 {}일 ({day}) {:02}:{:02} {}",
                    local.year(),
                    local.month(),
                    local.day(),
                    local.hour(),
                    local.minute(),
                    zone.abbreviation_at(at)
                )
            }
        }
    }

    pub fn hello(self, name: &str) -> String {
        match self.0 {
            English => format!("Hello {name},"),
            Korean => format!("{name} 님, 안녕하세요."),
        }
    }

    pub fn order_confirmed(self, order: u64, title: &str) -> String {
        match self.0 {
            English => format!("your order {order} for {title} is confirmed."),
            Korean => format!("{title} 예매(주문 번호 {order})가 확정되었습니다."),
        }
    }

    pub fn order_confirmed_subject(self, title: &str) -> String {
        match self.0 {
            English => format!("Your tickets for {title}"),
            Korean => format!("{title} 티켓"),
        }
    }

    pub fn hold_reminder(self, title: &str, seats: &str, until: &str) -> String {
        match self.0 {
            English => format!(
                "your seats for {title} ({seats}) are held for you until {until}. Confirm them \
                 before then, or they go back on sale."
            ),
            Korean => format!(
                "{title}의 좌석({seats})이 {until}까지 선점되어 있습니다. 그 전에 확정하지 않으면 \
                 좌석이 다시 판매됩니다."
            ),
        }
    }

    pub fn hold_reminder_subject(self, title: &str, until: &str) -> String {
        match self.0 {
            English => format!("Confirm your seats for {title} by {until}"),
            Korean => format!("{until}까지 {title} 좌석을 확정해 주세요"),
        }
    }

    pub fn waiting_list_offer(self, title: &str, seats: &str, until: &str) -> String {
        match self.0 {
            English => format!(
                "seats came back for {title} and the waiting list has given them to you: {seats}, \
                 held for you until {until}. Confirm them before then, or they go to the next fan \
                 in the list."
            ),
            Korean => format!(
                "{title}에 취소표가 나와 대기 명단에서 회원님께 드렸습니다: {seats}. {until}까지 \
                 선점되어 있으며, 그 전에 확정하지 않으면 다음 대기자에게 넘어갑니다."
            ),
        }
    }

    pub fn waiting_list_offer_subject(self, title: &str) -> String {
        match self.0 {
            English => format!("Seats for {title} are yours to confirm"),
            Korean => format!("{title} 좌석을 확정해 주세요"),
        }
    }

    pub fn your_payment(self) -> String {
        match self.0 {
            English => "your payment".to_owned(),
            Korean => "결제하신 금액".to_owned(),
        }
    }

    pub fn concert_cancelled(self, title: &str) -> String {
        match self.0 {
            English => format!("{title} is cancelled, and we are sorry."),
            Korean => format!("{title} 공연이 취소되었습니다. 죄송합니다."),
        }
    }

    pub fn tickets_refunded(self, order: u64, title: &str) -> String {
        match self.0 {
            English => format!("tickets of your order {order} for {title} are refunded."),
            Korean => format!("{title} 예매(주문 번호 {order})의 티켓이 환불되었습니다."),
        }
    }

    pub fn paid_too_late(self, order: u64, title: &str) -> String {
        match self.0 {
            English => format!(
                "your payment for order {order} for {title} arrived after your hold had ended, so \
                 no seat was sold for it."
            ),
            Korean => format!(
                "{title} 예매(주문 번호 {order})의 결제가 선점 시간이 끝난 뒤에 도착하여 좌석이 \
                 판매되지 않았습니다."
            ),
        }
    }

    pub fn money_back(self, amount: &str) -> String {
        match self.0 {
            English => format!(
                "{amount} goes back to the card you paid with; banks take 5-10 days to show it. A \
                 refunded ticket no longer admits anyone."
            ),
            Korean => format!(
                "{amount}은(는) 결제하신 카드로 돌아갑니다. 카드사에 표시되기까지 5~10일이 \
                 걸립니다. 환불된 티켓으로는 입장할 수 없습니다."
            ),
        }
    }

    pub fn refund_subject(self, title: &str) -> String {
        match self.0 {
            English => format!("Refund for {title}"),
            Korean => format!("{title} 환불 안내"),
        }
    }

    pub fn your_tickets(self) -> &'static str {
        match self.0 {
            English => "Your tickets",
            Korean => "내 티켓",
        }
    }

    pub fn your_reservations(self) -> &'static str {
        match self.0 {
            English => "Your reservations",
            Korean => "내 예매",
        }
    }

    pub fn confirm_on_the_page(self) -> &'static str {
        match self.0 {
            English => "Confirm on the box office's page",
            Korean => "매표소 페이지에서 확정하기",
        }
    }

    pub fn seats_heading(self, count: usize) -> String {
        match self.0 {
            English => format!("Seats ({count}):"),
            Korean => format!("좌석 ({count}석):"),
        }
    }

    pub fn total(self) -> &'static str {
        match self.0 {
            English => "Total",
            Korean => "합계",
        }
    }

    pub fn show_at_the_door(self) -> &'static str {
        match self.0 {
            English => {
                "Show each seat's QR code at the door: one person a ticket, admitted once. The \
                 codes are below, and on the box office's page under My tickets."
            }
            Korean => {
                "입장할 때 좌석마다 QR 코드를 보여 주세요. 티켓 한 장에 한 사람, 한 번만 입장할 수 \
                 있습니다. 코드는 아래와 매표소 페이지의 내 티켓에 있습니다."
            }
        }
    }

    /// "Seat A-1" above a ticket's code.
    pub fn seat(self, number: &str) -> String {
        match self.0 {
            English => format!("Seat {number}"),
            Korean => format!("좌석 {number}"),
        }
    }

    pub fn ticket(self, id: u64) -> String {
        match self.0 {
            English => format!("ticket {id}"),
            Korean => format!("티켓 {id}"),
        }
    }

    pub fn qr_alt(self, number: &str) -> String {
        match self.0 {
            English => format!("QR code of the ticket for seat {number}"),
            Korean => format!("좌석 {number} 티켓의 QR 코드"),
        }
    }

    pub fn ticket_codes(self) -> &'static str {
        match self.0 {
            English => "Ticket codes:",
            Korean => "티켓 코드:",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    #[test]
    fn a_time_is_written_in_the_venues_zone_in_either_language() {
        let seoul = VenueTimeZone::parse("Asia/Seoul").unwrap();
        let at = Utc.with_ymd_and_hms(2099, 5, 1, 10, 0, 0).unwrap();
        assert_eq!(Words(English).when(seoul, at), "Fri 1 May 2099, 19:00 KST");
        assert_eq!(
            Words(Korean).when(seoul, at),
            "2099년 5월 1일 (금) 19:00 KST"
        );
    }
}
