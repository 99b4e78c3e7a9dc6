//! What an operator sends to create or change a concert, parsed into the
//! domain's types: every field checked, every failure listed in one answer.
//! Long because it is every field of both requests (seats, holds, caps,
//! the opening and lottery, prices) in the one place that parses them.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use ticket_core::db::{self};
use ticket_core::domain::price::CategoryInput;
use ticket_core::domain::standing_area::AreaInput;
use ticket_core::domain::{
    ConcertDate, ConcertTitle, FieldError, HoldDuration, LotteryWindow, MaxSeatsPerOrder,
    MaxSeatsPerUser, OfferDuration, OpensAt, OrganizerId, PresaleStartsAt, PriceCategories,
    ProofOfWork, RefundableUntil, SeatLayout, StandingAreas, Venue, VenueTimeZone, keep,
};
use utoipa::ToSchema;

use crate::extract::integral;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateConcertRequest {
    /// The organizer that runs it. Absent: the caller's one organizer (the
    /// platform's admin: the installation's first organizer).
    #[serde(default, deserialize_with = "integral::optional")]
    organizer_id: Option<u64>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$",
        required = true
    )]
    #[serde(default)]
    title: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$",
        required = true
    )]
    #[serde(default)]
    venue: Option<String>,
    /// RFC 3339, in the future.
    #[schema(example = "2030-05-01T19:00:00+09:00", format = DateTime, required = true)]
    #[serde(default)]
    concert_date: Option<String>,
    /// Rows lettered A…Z, AA…; rows × seatsPerRow ≤ 100,000. Default: 1 row of 100.
    #[schema(minimum = 1, maximum = 100000)]
    rows: Option<u32>,
    #[schema(minimum = 1, maximum = 100000)]
    seats_per_row: Option<u32>,
    /// 0: a won request is CONFIRMED at once (the default of a free
    /// concert). Above 0: it is HELD for this many seconds unless confirmed
    /// or paid for. A concert with prices must hold (default 900).
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 3600)]
    hold_seconds: Option<u64>,
    /// Seats one request may name, 1–10 (default 4).
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 10)]
    max_seats_per_order: Option<u64>,
    /// Seats one user may have in the concert, 1–100: held, confirmed and
    /// asked for by open requests together (default: `maxSeatsPerOrder`).
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 100)]
    max_seats_per_user: Option<u64>,
    /// When the sale opens (RFC 3339); requests before it are refused with
    /// SALE_NOT_OPEN, or join the lottery inside `lotteryWindowSeconds`.
    /// Absent or null: on sale at once.
    #[schema(example = "2030-04-01T10:00:00+09:00", format = DateTime)]
    opens_at: Option<String>,
    /// When a presale begins (RFC 3339, before `opensAt`): from then until
    /// `opensAt` a request needs an `accessCode`. Absent or null: none.
    #[schema(example = "2030-03-31T10:00:00+09:00", format = DateTime)]
    presale_starts_at: Option<String>,
    /// 0 (default) to 86,400: requests placed this long before `opensAt`
    /// are put in a uniformly random order at the opening, ahead of every
    /// later request. Needs `opensAt`.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 86400)]
    lottery_window_seconds: Option<u64>,
    /// 0 (default, off) to 12: the proof-of-work level a request must pay
    /// (see `GET /api/concerts/{id}/challenge`); level L costs a client
    /// 750 · 2^(L-1) SHA-256 hashes on average.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 12)]
    proof_of_work: Option<u64>,
    /// 1 to 86,400 (default 900): how long seats offered to a fan from
    /// the waiting list are held for them to confirm.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 86400)]
    waiting_list_offer_seconds: Option<u64>,
    /// Until when a fan may give back their tickets paid through the
    /// payment provider (RFC 3339). Absent or null: never (an admin always
    /// may).
    #[schema(example = "2030-04-30T18:00:00+09:00", format = DateTime)]
    refundable_until: Option<String>,
    /// The venue's time zone (IANA, e.g. `Asia/Seoul`): the page shows
    /// the concert's date and sale times in it. Default: the server's
    /// (`TICKET_TIME_ZONE`).
    #[schema(max_length = 64, example = "Asia/Seoul")]
    time_zone: Option<String>,
    /// Price categories, 1–20, in one currency: each seat belongs to the
    /// one naming its row, else to the first. Absent: the concert has no
    /// prices (seats, holds and events carry none).
    categories: Option<Vec<CategoryRequest>>,
    /// Standing areas, 0–20: floors without seat numbers, asked for by
    /// `{concertId, area, count}`. Absent: none.
    areas: Option<Vec<AreaRequest>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateConcertRequest {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    venue: Option<String>,
    /// RFC 3339, in the future.
    #[schema(format = DateTime)]
    concert_date: Option<String>,
    /// Applies to requests decided from now on; holds already given keep
    /// their end.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 3600)]
    hold_seconds: Option<u64>,
    /// Applies to requests made from now on.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 10)]
    max_seats_per_order: Option<u64>,
    /// Applies to requests decided from now on; seats a user has already
    /// stay theirs.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 100)]
    max_seats_per_user: Option<u64>,
    /// A new opening time (RFC 3339), or null for on sale now. Requests
    /// already in line keep their places.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(format = DateTime, nullable)]
    opens_at: Option<Option<String>>,
    /// A new presale start (RFC 3339, before the opening), or null for no
    /// presale.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(format = DateTime, nullable)]
    presale_starts_at: Option<Option<String>>,
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 86400)]
    lottery_window_seconds: Option<u64>,
    /// 0 (default, off) to 12: the proof-of-work level a request must pay
    /// (see `GET /api/concerts/{id}/challenge`); level L costs a client
    /// 750 · 2^(L-1) SHA-256 hashes on average.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 12)]
    proof_of_work: Option<u64>,
    /// 1 to 86,400 (default 900): how long seats offered to a fan from
    /// the waiting list are held for them to confirm.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 86400)]
    waiting_list_offer_seconds: Option<u64>,
    /// A new refund deadline for fans (RFC 3339), or null for none.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(format = DateTime, nullable)]
    refundable_until: Option<Option<String>>,
    /// The venue's time zone (IANA, e.g. `Asia/Seoul`).
    #[schema(max_length = 64, example = "Asia/Seoul")]
    time_zone: Option<String>,
    /// New price categories, replacing the old: every seat is put in its
    /// row's again (moves made seat by seat start over). Held and sold seats
    /// keep the price they were decided at.
    categories: Option<Vec<CategoryRequest>>,
    /// New standing areas, replacing the old (`[]`: none), while no place
    /// of them was ever asked for (else 409 AREAS_ALREADY_REQUESTED).
    areas: Option<Vec<AreaRequest>>,
}

/// One price category as sent.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CategoryRequest {
    /// 1–40 characters, unique in the concert (case-insensitively).
    #[schema(min_length = 1, max_length = 40, example = "VIP")]
    name: String,
    /// In the currency's minor units (cents; won have none), at most 10^11.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 0, maximum = 100000000000_u64, example = 150000)]
    price: u64,
    /// ISO 4217, the same for every category of the concert.
    #[schema(min_length = 3, max_length = 3, example = "KRW")]
    currency: String,
    /// Row labels (the letters of the seat numbers: A, B, AA); a row in
    /// at most one category.
    #[serde(default)]
    #[schema(example = json!(["A", "B"]))]
    rows: Vec<String>,
    /// The colour its seats are painted in on the seat map (`#` and six
    /// hex digits); absent: the page's palette by position.
    #[schema(pattern = "^#[0-9A-Fa-f]{6}$", example = "#c0392b")]
    colour: Option<String>,
}

/// One standing area as sent.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AreaRequest {
    /// 1–40 characters, unique in the concert (case-insensitively).
    #[schema(min_length = 1, max_length = 40, example = "Floor")]
    name: String,
    /// Its places, 1 to 100,000 (the areas of a concert together at most
    /// 100,000): each an entry number, given in line order.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 1, maximum = 100000, example = 5000)]
    capacity: u64,
    /// The price category its places are sold in, by name; absent: the
    /// first (none for a concert without prices).
    #[schema(example = "Standing")]
    category: Option<String>,
}

/// The areas sent, parsed: None when not sent, Some(None) when invalid
/// (the reason recorded in `errors`).
fn areas(
    raw: Option<&[AreaRequest]>,
    errors: &mut Vec<FieldError>,
) -> Option<Option<StandingAreas>> {
    let raw = raw?;
    let input: Vec<AreaInput<'_>> = raw
        .iter()
        .map(|a| AreaInput {
            name: &a.name,
            capacity: a.capacity,
            category: a.category.as_deref(),
        })
        .collect();
    Some(keep(StandingAreas::parse(&input), errors))
}

/// Every area names a category the concert has (by name): 400 naming the
/// first that does not.
pub fn areas_in_categories(
    areas: &StandingAreas,
    categories: Option<&PriceCategories>,
) -> Result<(), FieldError> {
    for area in &areas.areas {
        let Some(name) = &area.category else {
            continue;
        };
        if categories.and_then(|c| c.position_of(name)).is_none() {
            return Err(FieldError::new(
                "areas",
                format!(
                    "{:?}: the concert has no price category {name:?}",
                    area.name
                ),
            ));
        }
    }
    Ok(())
}

/// The categories sent, parsed: None when not sent, Some(None) when invalid
/// (the reason recorded in `errors`).
fn categories(
    raw: Option<&[CategoryRequest]>,
    errors: &mut Vec<FieldError>,
) -> Option<Option<PriceCategories>> {
    let raw = raw?;
    let input: Vec<CategoryInput<'_>> = raw
        .iter()
        .map(|c| CategoryInput {
            name: &c.name,
            price: c.price,
            currency: &c.currency,
            rows: &c.rows,
            colour: c.colour.as_deref(),
        })
        .collect();
    Some(keep(PriceCategories::parse(&input), errors))
}

/// A valid new concert.
pub struct NewConcert {
    pub(super) organizer: Option<OrganizerId>,
    pub(super) title: ConcertTitle,
    pub(super) venue: Venue,
    pub(super) date: ConcertDate,
    pub(super) layout: SeatLayout,
    pub(super) settings: db::concerts::Settings,
    pub(super) categories: Option<PriceCategories>,
    pub(super) areas: Option<StandingAreas>,
    /// None: the server's.
    pub(super) time_zone: Option<VenueTimeZone>,
}

impl TryFrom<CreateConcertRequest> for NewConcert {
    type Error = Vec<FieldError>;

    fn try_from(req: CreateConcertRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let organizer = req.organizer_id.map(OrganizerId);
        // Missing ones are field errors like any other, all at once.
        let title = keep(
            required("title", req.title.as_deref()).and_then(ConcertTitle::parse),
            &mut errors,
        );
        let venue = keep(
            required("venue", req.venue.as_deref()).and_then(Venue::parse),
            &mut errors,
        );
        let date = keep(
            required("concertDate", req.concert_date.as_deref())
                .and_then(|date| ConcertDate::parse(date, Utc::now())),
            &mut errors,
        );
        let layout = keep(SeatLayout::parse(req.rows, req.seats_per_row), &mut errors);
        let time_zone = keep(
            req.time_zone
                .as_deref()
                .map(VenueTimeZone::parse)
                .transpose(),
            &mut errors,
        )
        .flatten();
        let categories = categories(req.categories.as_deref(), &mut errors).flatten();
        let areas = areas(req.areas.as_deref(), &mut errors).flatten();
        if let Some(areas) = &areas
            && let Err(e) = areas_in_categories(areas, categories.as_ref())
        {
            errors.push(e);
        }
        let sale = settings(
            RawSettings {
                hold_seconds: req.hold_seconds,
                max_seats_per_order: req.max_seats_per_order,
                max_seats_per_user: req.max_seats_per_user,
                lottery_window_seconds: req.lottery_window_seconds,
                proof_of_work: req.proof_of_work,
                waiting_list_offer_seconds: req.waiting_list_offer_seconds,
            },
            &mut errors,
        );
        let priced = categories.as_ref().is_some_and(PriceCategories::is_priced);
        let hold = sale
            .as_ref()
            .and_then(|sale| keep(HoldDuration::of_concert(sale.hold, priced), &mut errors));
        let opens_at = keep(
            req.opens_at.as_deref().map(OpensAt::parse).transpose(),
            &mut errors,
        );
        let refundable_until = keep(
            req.refundable_until
                .as_deref()
                .map(RefundableUntil::parse)
                .transpose(),
            &mut errors,
        );
        if req.opens_at.is_none() && req.lottery_window_seconds.is_some_and(|s| s > 0) {
            errors.push(FieldError::new(
                "lotteryWindowSeconds",
                "a lottery needs opensAt",
            ));
        }
        let presale = keep(
            req.presale_starts_at
                .as_deref()
                .map(PresaleStartsAt::parse)
                .transpose(),
            &mut errors,
        );
        if let (Some(Some(presale)), Some(opens_at)) = (presale, opens_at)
            && let Err(e) = presale_before_opening(presale, opens_at)
        {
            errors.push(e);
        }
        if let (Some(date), Some(opens_at), Some(presale)) = (date, opens_at, presale)
            && let Err(late) = sale_before_concert(
                date.get(),
                opens_at.map(OpensAt::get),
                presale.map(PresaleStartsAt::get),
            )
        {
            errors.extend(late);
        }
        match (
            title,
            venue,
            date,
            layout,
            sale,
            hold,
            opens_at,
            presale,
            refundable_until,
        ) {
            (
                Some(title),
                Some(venue),
                Some(date),
                Some(layout),
                Some(sale),
                Some(hold),
                Some(opens_at),
                Some(presale_starts_at),
                Some(refundable_until),
            ) if errors.is_empty() => Ok(Self {
                organizer,
                title,
                venue,
                date,
                layout,
                settings: db::concerts::Settings {
                    hold,
                    max_seats_per_order: sale.max_seats_per_order.unwrap_or_default(),
                    max_seats_per_user: sale.max_seats_per_user,
                    opens_at,
                    presale_starts_at,
                    lottery: sale.lottery.unwrap_or_default(),
                    proof_of_work: sale.proof_of_work.unwrap_or_default(),
                    waiting_list_offer: sale.waiting_list_offer.unwrap_or_default(),
                    refundable_until,
                    time_zone: time_zone.unwrap_or_default(),
                },
                categories,
                areas,
                time_zone,
            }),
            _ => Err(errors),
        }
    }
}

/// The sale settings a create or a change sent.
struct RawSettings {
    hold_seconds: Option<u64>,
    max_seats_per_order: Option<u64>,
    max_seats_per_user: Option<u64>,
    lottery_window_seconds: Option<u64>,
    proof_of_work: Option<u64>,
    waiting_list_offer_seconds: Option<u64>,
}

/// The sale settings a create or a change gave (`None`: not given).
struct GivenSettings {
    hold: Option<HoldDuration>,
    max_seats_per_order: Option<MaxSeatsPerOrder>,
    max_seats_per_user: Option<MaxSeatsPerUser>,
    lottery: Option<LotteryWindow>,
    proof_of_work: Option<ProofOfWork>,
    waiting_list_offer: Option<OfferDuration>,
}

/// The sale settings of a create or a change, each parsed when given; None
/// when any is invalid (each invalid one recorded in `errors`).
fn settings(raw: RawSettings, errors: &mut Vec<FieldError>) -> Option<GivenSettings> {
    let hold = keep(
        raw.hold_seconds.map(HoldDuration::parse).transpose(),
        errors,
    );
    let per_order = keep(
        raw.max_seats_per_order
            .map(MaxSeatsPerOrder::parse)
            .transpose(),
        errors,
    );
    let per_user = keep(
        raw.max_seats_per_user
            .map(MaxSeatsPerUser::parse)
            .transpose(),
        errors,
    );
    let lottery = keep(
        raw.lottery_window_seconds
            .map(LotteryWindow::parse)
            .transpose(),
        errors,
    );
    let proof_of_work = keep(
        raw.proof_of_work.map(ProofOfWork::parse).transpose(),
        errors,
    );
    let waiting_list_offer = keep(
        raw.waiting_list_offer_seconds
            .map(OfferDuration::parse)
            .transpose(),
        errors,
    );
    Some(GivenSettings {
        hold: hold?,
        max_seats_per_order: per_order?,
        max_seats_per_user: per_user?,
        lottery: lottery?,
        proof_of_work: proof_of_work?,
        waiting_list_offer: waiting_list_offer?,
    })
}

/// A valid change to a concert; absent fields stay as they are.
pub struct ConcertChanges(
    pub(super) db::concerts::Changes,
    pub(super) Option<PriceCategories>,
    pub(super) Option<StandingAreas>,
);

impl TryFrom<UpdateConcertRequest> for ConcertChanges {
    type Error = Vec<FieldError>;

    fn try_from(req: UpdateConcertRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let title = keep(
            req.title.as_deref().map(ConcertTitle::parse).transpose(),
            &mut errors,
        );
        let venue = keep(
            req.venue.as_deref().map(Venue::parse).transpose(),
            &mut errors,
        );
        let date = keep(
            req.concert_date
                .as_deref()
                .map(|d| ConcertDate::parse(d, Utc::now()))
                .transpose(),
            &mut errors,
        );
        let sale = settings(
            RawSettings {
                hold_seconds: req.hold_seconds,
                max_seats_per_order: req.max_seats_per_order,
                max_seats_per_user: req.max_seats_per_user,
                lottery_window_seconds: req.lottery_window_seconds,
                proof_of_work: req.proof_of_work,
                waiting_list_offer_seconds: req.waiting_list_offer_seconds,
            },
            &mut errors,
        );
        let opens_at = keep(
            req.opens_at
                .map(|at| at.as_deref().map(OpensAt::parse).transpose())
                .transpose(),
            &mut errors,
        );
        let presale = keep(
            req.presale_starts_at
                .map(|at| at.as_deref().map(PresaleStartsAt::parse).transpose())
                .transpose(),
            &mut errors,
        );
        let refundable_until = keep(
            req.refundable_until
                .map(|at| at.as_deref().map(RefundableUntil::parse).transpose())
                .transpose(),
            &mut errors,
        );
        let time_zone = keep(
            req.time_zone
                .as_deref()
                .map(VenueTimeZone::parse)
                .transpose(),
            &mut errors,
        );
        let categories = categories(req.categories.as_deref(), &mut errors);
        let areas = areas(req.areas.as_deref(), &mut errors);
        let Some(time_zone) = time_zone else {
            return Err(errors);
        };
        if categories.as_ref().is_some_and(Option::is_none)
            || areas.as_ref().is_some_and(Option::is_none)
        {
            return Err(errors);
        }
        let categories = categories.flatten();
        let areas = areas.flatten();
        match (
            title,
            venue,
            date,
            sale,
            opens_at,
            presale,
            refundable_until,
        ) {
            (
                Some(title),
                Some(venue),
                Some(date),
                Some(sale),
                Some(opens_at),
                Some(presale),
                Some(refundable_until),
            ) => Ok(Self(
                db::concerts::Changes {
                    title,
                    venue,
                    date,
                    hold: sale.hold,
                    max_seats_per_order: sale.max_seats_per_order,
                    max_seats_per_user: sale.max_seats_per_user,
                    opens_at,
                    presale_starts_at: presale,
                    lottery: sale.lottery,
                    proof_of_work: sale.proof_of_work,
                    waiting_list_offer: sale.waiting_list_offer,
                    refundable_until,
                    time_zone,
                },
                categories,
                areas,
            )),
            _ => Err(errors),
        }
    }
}

/// A field a create cannot do without.
fn required<'a>(field: &'static str, value: Option<&'a str>) -> Result<&'a str, FieldError> {
    value.ok_or_else(|| FieldError::new(field, "required"))
}

/// A sale (and its presale) must open before the concert it sells: one
/// that opens at or after it sells nothing. Every field at fault, at once.
pub fn sale_before_concert(
    concert_date: DateTime<Utc>,
    opens_at: Option<DateTime<Utc>>,
    presale_starts_at: Option<DateTime<Utc>>,
) -> Result<(), Vec<FieldError>> {
    let mut errors = Vec::new();
    for (field, at) in [
        ("opensAt", opens_at),
        ("presaleStartsAt", presale_starts_at),
    ] {
        if at.is_some_and(|at| at >= concert_date) {
            errors.push(FieldError::new(field, "must be before concertDate"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A presale ends at the opening, so it must begin before it; without an
/// opening there is nothing to be early for.
pub fn presale_before_opening(
    presale: PresaleStartsAt,
    opens_at: Option<OpensAt>,
) -> Result<(), FieldError> {
    match opens_at {
        Some(opens) if presale.get() < opens.get() => Ok(()),
        Some(_) => Err(FieldError::new("presaleStartsAt", "must be before opensAt")),
        None => Err(FieldError::new(
            "presaleStartsAt",
            "a presale needs opensAt",
        )),
    }
}
