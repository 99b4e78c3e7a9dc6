//! The one permission check of every operator route: what the caller is
//! on the organizer of what the route acts on, against the role table
//! (`ticket_core::domain::MemberRole::grants`).

use sqlx::{MySqlConnection, MySqlPool};
use ticket_core::db::organizers::{self, Membership};
use ticket_core::domain::{
    ConcertId, MemberRole, OrganizerId, Permission, RefundId, SeatId, ShiftId, UserId,
};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::AuthUser;

/// What a route acts on.
#[derive(Debug, Clone, Copy)]
pub enum On {
    Concert(ConcertId),
    Organizer(OrganizerId),
    /// A seat's concert.
    Seat(SeatId),
    /// A refund's concert.
    Refund(RefundId),
    /// A desk shift's concert.
    Shift(ShiftId),
}

/// Who was let through, and as what: recorded with what they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub user: UserId,
    pub organizer: OrganizerId,
    /// None: the platform's admin, who helps every organizer.
    pub role: Option<MemberRole>,
}

/// [`permit`] on a connection of its own, before the route's work.
pub async fn permit_on(
    pool: &MySqlPool,
    caller: AuthUser,
    on: On,
    needs: Permission,
) -> ApiResult<Grant> {
    let mut conn = pool.acquire().await?;
    permit(&mut conn, caller, on, needs).await
}

/// Lets `caller` through when their role on the organizer of `on` gives
/// `needs`. A member of another organizer (or of this one, limited to
/// other concerts) is told the thing does not exist, as one that does not;
/// a member without the permission gets 403 naming it; a caller who is no
/// organizer's member (a fan) gets 403, as before organizers.
pub async fn permit(
    conn: &mut MySqlConnection,
    caller: AuthUser,
    on: On,
    needs: Permission,
) -> ApiResult<Grant> {
    let found = match on {
        On::Concert(concert) => organizers::on_concert(conn, caller.id, concert).await?,
        On::Organizer(organizer) => organizers::on_organizer(conn, caller.id, organizer).await?,
        On::Seat(seat) => match organizers::concert_of_seat(conn, seat).await? {
            Some(concert) => organizers::on_concert(conn, caller.id, concert).await?,
            None => None,
        },
        On::Refund(refund) => match organizers::concert_of_refund(conn, refund).await? {
            Some(concert) => organizers::on_concert(conn, caller.id, concert).await?,
            None => None,
        },
        On::Shift(shift) => match ticket_core::db::desk::find(conn, shift).await? {
            Some(s) => organizers::on_concert(conn, caller.id, s.concert_id).await?,
            None => None,
        },
    };
    let not_found = || match on {
        On::Concert(_) => ApiError::concert_not_found(),
        On::Organizer(_) => ApiError::organizer_not_found(),
        On::Seat(_) => ApiError::seat_not_found(),
        On::Refund(_) => ApiError::new(ErrorCode::RefundNotFound, "no such refund"),
        On::Shift(_) => ApiError::shift_not_found(),
    };
    match judge(caller, found, needs) {
        Standing::Granted(grant) => Ok(grant),
        Standing::Lacks => Err(ApiError::permission_required(needs)),
        Standing::Outside
            if caller.is_admin() || organizers::is_member(conn, caller.id).await? =>
        {
            Err(not_found())
        }
        Standing::Outside => Err(ApiError::new(
            ErrorCode::Forbidden,
            "this action is for the members of the concert's organizer",
        )),
    }
}

/// Who acts on a fan's thing (a reservation, its tickets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The fan it belongs to.
    Fan,
    /// Staff of its concert's organizer, as their role lets them; what
    /// they do is recorded.
    Staff(Grant),
}

impl Actor {
    pub fn grant(self) -> Option<Grant> {
        match self {
            Self::Fan => None,
            Self::Staff(grant) => Some(grant),
        }
    }
}

/// Lets `caller` act on a thing of fan `owner` at `concert`: the fan
/// themselves, or staff whose role there gives `needs` (the desk finding
/// an order, confirming money it took, giving it back). Everyone else is
/// told it does not exist (`not_found`), as one that does not, so ids
/// cannot be probed; a member of its organizer without the permission is
/// told which one they lack.
pub async fn acting_on(
    conn: &mut MySqlConnection,
    caller: AuthUser,
    owner: UserId,
    concert: ConcertId,
    needs: Permission,
    not_found: fn() -> ApiError,
) -> ApiResult<Actor> {
    if caller.id == owner && !caller.is_admin() {
        return Ok(Actor::Fan);
    }
    let found = organizers::on_concert(conn, caller.id, concert).await?;
    match judge(caller, found, needs) {
        Standing::Granted(grant) => Ok(Actor::Staff(grant)),
        Standing::Lacks => Err(ApiError::permission_required(needs)),
        Standing::Outside => Err(not_found()),
    }
}

/// What the caller is on the organizer found: let through, a member
/// lacking the permission, or no member of it (or limited elsewhere).
enum Standing {
    Granted(Grant),
    Lacks,
    Outside,
}

fn judge(caller: AuthUser, found: Option<Membership>, needs: Permission) -> Standing {
    let grant = |organizer, role| Grant {
        user: caller.id,
        organizer,
        role,
    };
    match found {
        Some(Membership { organizer, .. }) if caller.is_admin() => {
            Standing::Granted(grant(organizer, None))
        }
        Some(Membership {
            organizer,
            role: Some(role),
            covers: true,
        }) => {
            if role.grants(needs) {
                Standing::Granted(grant(organizer, Some(role)))
            } else {
                Standing::Lacks
            }
        }
        _ => Standing::Outside,
    }
}
