//! What the organizers' routes answer.

use serde::Serialize;
use ticket_core::db::organizers::{MemberRow, OrganizerRow};
use ticket_core::domain::{ConcertId, OrganizerId, Permission};
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizerResponse {
    id: u64,
    name: String,
    slug: String,
    /// The caller's role in it; null for the platform's admin who is not a
    /// member.
    #[schema(value_type = Option<String>, example = "OWNER")]
    role: Option<&'static str>,
    /// The most the desk gives back in one refund (minor units); null: no
    /// limit.
    desk_refund_limit: Option<u64>,
    /// What the caller may do there (every permission for the platform's
    /// admin), as the role table in docs/concepts.md says.
    #[schema(value_type = Vec<String>, example = json!(["CHECK_IN", "MANAGE_SCANNERS"]))]
    permissions: Vec<&'static str>,
    /// The concerts the caller's role covers when it is limited to some;
    /// null: every concert of the organizer.
    concert_ids: Option<Vec<u64>>,
}

impl OrganizerResponse {
    /// The organizer as `caller` sees it: what their role (or the
    /// platform's admin) may do there, on which concerts.
    pub fn of(o: OrganizerRow, admin: bool, covered: &[(OrganizerId, ConcertId)]) -> Self {
        let permissions = Permission::ALL
            .into_iter()
            .filter(|p| admin || o.role.is_some_and(|r| r.grants(*p)))
            .map(Permission::as_str)
            .collect();
        let concert_ids = (o.limited == Some(true) && !admin).then(|| {
            covered
                .iter()
                .filter(|(organizer, _)| *organizer == o.id)
                .map(|(_, c)| c.get())
                .collect()
        });
        Self {
            id: o.id.get(),
            name: o.name,
            slug: o.slug,
            role: o.role.map(|r| r.as_str()),
            desk_refund_limit: o.desk_refund_limit,
            permissions,
            concert_ids,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberResponse {
    user_id: u64,
    nick_name: String,
    #[schema(value_type = String, example = "DOOR")]
    role: &'static str,
    /// The concerts the role covers; null: every concert of the organizer.
    concert_ids: Option<Vec<u64>>,
}

impl From<MemberRow> for MemberResponse {
    fn from(m: MemberRow) -> Self {
        let concert_ids = m
            .limited
            .then(|| m.concerts.iter().map(|c| c.get()).collect());
        Self {
            user_id: m.user_id.get(),
            nick_name: m.nickname,
            role: m.role.as_str(),
            concert_ids,
        }
    }
}
