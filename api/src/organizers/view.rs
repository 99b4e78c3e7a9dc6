//! What the organizers' routes answer.

use serde::Serialize;
use ticket_core::db::organizers::{MemberRow, OrganizerRow};
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
}

impl From<OrganizerRow> for OrganizerResponse {
    fn from(o: OrganizerRow) -> Self {
        Self {
            id: o.id.get(),
            name: o.name,
            slug: o.slug,
            role: o.role.map(|r| r.as_str()),
            desk_refund_limit: o.desk_refund_limit,
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
        let concert_ids = m.limited.then(|| {
            m.concert_ids
                .as_deref()
                .unwrap_or("")
                .split(',')
                .filter_map(|id| id.parse().ok())
                .collect()
        });
        Self {
            user_id: m.user_id.get(),
            nick_name: m.nickname,
            role: m.role.as_str(),
            concert_ids,
        }
    }
}
