//! The door (issue 31): scanners' credentials made by an admin, check-in
//! exactly once (online, and uploaded after a scanner was offline, with
//! the conflicts that offline admissions make), and who may scan.

pub mod door_staff;
pub mod known_scanners;
pub mod routes;
pub mod scanners;
pub mod state;
pub mod verdict;

pub use routes::router;
