//! Organizers (promoters, venues) own concerts; their members' roles say
//! what each may do (issue 60). Every operator route asks `access::permit`.

pub mod access;
pub mod audit;
pub mod invitations;
pub mod routes;
pub mod state;
pub mod trail;
mod view;

pub use routes::router;
