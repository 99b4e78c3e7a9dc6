//! Organizers, the roles of their members, and what each role may do: the
//! code's single source for the table in docs/concepts.md (a test compares
//! them), so that a role's powers are said once.

use serde::{Deserialize, Serialize};

use super::FieldError;

/// What an operator route needs. Each operator route names exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Permission {
    /// Invite members, change their roles, remove them; rename the organizer.
    ManageTeam,
    /// Create, change and delete concerts, their seats, prices, plans,
    /// standing areas and sale times.
    EditConcerts,
    /// Issue and revoke presale access codes.
    ManageAccessCodes,
    /// Read a concert's waiting list.
    ManageWaitingList,
    /// Pair and revoke the door's scanners.
    ManageScanners,
    /// Admit tickets at the door.
    CheckIn,
    /// Read a concert's sale as it happens.
    ViewSale,
    /// Find a fan's orders by number, nickname or e-mail, read them and
    /// their tickets (to print or send again).
    FindOrders,
    /// Sell at the desk: confirm a hold paid in cash or by the card
    /// terminal.
    SellAtDesk,
    /// Give money back for sold tickets.
    Refund,
    /// Read the takings and export them.
    ReadTakings,
    /// Cancel a show (every ticket refunded).
    CancelShow,
    /// Void sold orders after a sale (bots, fraud), each refunded.
    VoidOrders,
    /// Read the record of who did what.
    ReadAudit,
}

impl Permission {
    pub const ALL: [Self; 14] = [
        Self::ManageTeam,
        Self::EditConcerts,
        Self::ManageAccessCodes,
        Self::ManageWaitingList,
        Self::ManageScanners,
        Self::CheckIn,
        Self::ViewSale,
        Self::FindOrders,
        Self::SellAtDesk,
        Self::Refund,
        Self::ReadTakings,
        Self::CancelShow,
        Self::VoidOrders,
        Self::ReadAudit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ManageTeam => "MANAGE_TEAM",
            Self::EditConcerts => "EDIT_CONCERTS",
            Self::ManageAccessCodes => "MANAGE_ACCESS_CODES",
            Self::ManageWaitingList => "MANAGE_WAITING_LIST",
            Self::ManageScanners => "MANAGE_SCANNERS",
            Self::CheckIn => "CHECK_IN",
            Self::ViewSale => "VIEW_SALE",
            Self::FindOrders => "FIND_ORDERS",
            Self::SellAtDesk => "SELL_AT_DESK",
            Self::Refund => "REFUND",
            Self::ReadTakings => "READ_TAKINGS",
            Self::CancelShow => "CANCEL_SHOW",
            Self::VoidOrders => "VOID_ORDERS",
            Self::ReadAudit => "READ_AUDIT",
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A member's role within one organizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemberRole {
    Owner,
    Manager,
    BoxOffice,
    Door,
    Finance,
}

impl MemberRole {
    pub const ALL: [Self; 5] = [
        Self::Owner,
        Self::Manager,
        Self::BoxOffice,
        Self::Door,
        Self::Finance,
    ];

    /// The table: what each role may do.
    pub fn grants(self, permission: Permission) -> bool {
        use Permission::*;
        match self {
            Self::Owner => true,
            Self::Manager => matches!(
                permission,
                EditConcerts
                    | ManageAccessCodes
                    | ManageWaitingList
                    | ManageScanners
                    | CheckIn
                    | ViewSale
            ),
            Self::BoxOffice => matches!(permission, ViewSale | FindOrders | SellAtDesk | Refund),
            Self::Door => matches!(permission, ManageScanners | CheckIn),
            Self::Finance => matches!(
                permission,
                ViewSale | FindOrders | Refund | ReadTakings | VoidOrders | ReadAudit
            ),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "OWNER",
            Self::Manager => "MANAGER",
            Self::BoxOffice => "BOX_OFFICE",
            Self::Door => "DOOR",
            Self::Finance => "FINANCE",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|role| role.as_str() == raw)
            .ok_or_else(|| {
                FieldError::new(
                    "role",
                    "must be one of OWNER, MANAGER, BOX_OFFICE, DOOR, FINANCE",
                )
            })
    }
}

// Stored as the same text the API uses.
impl sqlx::Type<sqlx::MySql> for MemberRole {
    fn type_info() -> sqlx::mysql::MySqlTypeInfo {
        <str as sqlx::Type<sqlx::MySql>>::type_info()
    }
    fn compatible(ty: &sqlx::mysql::MySqlTypeInfo) -> bool {
        <str as sqlx::Type<sqlx::MySql>>::compatible(ty)
    }
}

impl<'q> sqlx::Encode<'q, sqlx::MySql> for MemberRole {
    fn encode_by_ref(
        &self,
        buf: &mut Vec<u8>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<sqlx::MySql>>::encode(self.as_str(), buf)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::MySql> for MemberRole {
    fn decode(value: sqlx::mysql::MySqlValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let text = <&str as sqlx::Decode<sqlx::MySql>>::decode(value)?;
        Ok(Self::parse(text)?)
    }
}

/// An organizer's name as people read it: 1 to 100 characters, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizerName(String);

impl OrganizerName {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let name = raw.trim();
        match name.chars().count() {
            0 => Err(FieldError::new("name", "must not be empty")),
            1..=100 => Ok(Self(name.to_owned())),
            _ => Err(FieldError::new("name", "must be at most 100 characters")),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An organizer's short name in addresses: 2 to 50 lower-case letters,
/// digits and inner hyphens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizerSlug(String);

impl OrganizerSlug {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let fits = (2..=50).contains(&raw.len())
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !raw.starts_with('-')
            && !raw.ends_with('-');
        if fits {
            Ok(Self(raw.to_owned()))
        } else {
            Err(FieldError::new(
                "slug",
                "must be 2 to 50 lower-case letters, digits and hyphens, not starting or ending with a hyphen",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_may_do_everything_and_the_door_only_scan() {
        for p in Permission::ALL {
            assert!(MemberRole::Owner.grants(p), "{p}");
        }
        let door: Vec<_> = Permission::ALL
            .into_iter()
            .filter(|p| MemberRole::Door.grants(*p))
            .collect();
        assert_eq!(door, [Permission::ManageScanners, Permission::CheckIn]);
        assert!(!MemberRole::Finance.grants(Permission::CancelShow));
        assert!(!MemberRole::Manager.grants(Permission::ManageTeam));
    }

    #[test]
    fn roles_round_trip_and_slugs_are_checked() {
        for role in MemberRole::ALL {
            assert_eq!(MemberRole::parse(role.as_str()), Ok(role));
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{}\"", role.as_str()));
        }
        for p in Permission::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
        assert!(MemberRole::parse("owner").is_err());
        assert!(OrganizerSlug::parse("live-nation-2").is_ok());
        for bad in ["A", "-x", "x-", "ab c", "Caps", ""] {
            assert!(OrganizerSlug::parse(bad).is_err(), "{bad}");
        }
        assert!(OrganizerName::parse("  ").is_err());
        assert_eq!(
            OrganizerName::parse(" Seoul Live ").unwrap().as_str(),
            "Seoul Live"
        );
    }
}

#[cfg(test)]
mod the_documented_table {
    use super::*;

    /// docs/concepts.md's table says what `MemberRole::grants` does, row
    /// by row and role by role.
    #[test]
    fn is_the_code_s_table() {
        let doc = include_str!("../../../docs/concepts.md");
        let header = "| Permission | OWNER | MANAGER | BOX_OFFICE | DOOR | FINANCE |";
        let rows: Vec<&str> = doc
            .lines()
            .skip_while(|line| *line != header)
            .skip(2)
            .take_while(|line| line.starts_with("| `"))
            .collect();
        assert_eq!(rows.len(), Permission::ALL.len(), "one row per permission");
        for (row, permission) in rows.iter().zip(Permission::ALL) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            assert!(
                cells[1].starts_with(&format!("`{permission}`")),
                "{row} should be {permission}'s"
            );
            for (cell, role) in cells[2..7].iter().zip(MemberRole::ALL) {
                assert_eq!(
                    *cell == "✓",
                    role.grants(permission),
                    "{permission} for {role:?}"
                );
            }
        }
    }
}
