//! The admin account named in the configuration, made ready at start-up.

use anyhow::Context;
use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{Language, NickName, Password, Role, UserId};

use crate::accounts::security::PasswordHasher;

/// Creates the admin account, or gives the existing admin the configured
/// password (voiding its older tokens) when it has another one. An account
/// that is not an admin is never taken over, whatever spelling of its name
/// (as the database compares names) the configuration uses: start-up fails.
/// Safe when several instances start at once.
pub async fn admin(
    pool: &MySqlPool,
    passwords: &PasswordHasher,
    nickname: &NickName,
    password: &Password,
) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await.context("connecting to the database")?;
    // Twice at most: another instance may create the account in between.
    for _ in 0..2 {
        let existing = db::users::find_by_nickname(&mut conn, nickname)
            .await
            .context("looking up the admin account")?;
        let Some(user) = existing else {
            let hash = passwords.hash(password.expose()).await?;
            let now = db::now(&mut conn).await?;
            match db::users::insert(
                &mut conn,
                nickname,
                &hash,
                Role::Admin,
                None,
                Language::default(),
                now,
            )
            .await
            {
                Ok(id) => return owner_of_the_first(&mut conn, id).await,
                Err(e) if db::violated_unique_key(&e).is_some() => continue,
                Err(e) => return Err(e).context("creating the admin account"),
            }
        };
        anyhow::ensure!(
            user.role == Role::Admin,
            "the admin nickname {:?} is taken by the existing account {:?} (id {}), which is not an \
             admin; refusing to take it over. Choose another admin nickname, or make that account \
             an admin in the database on purpose",
            nickname.as_str(),
            user.nickname,
            user.id
        );
        owner_of_the_first(&mut conn, user.id).await?;
        if passwords
            .verify(password.expose(), Some(&user.password_hash))
            .await?
        {
            return Ok(());
        }
        let hash = passwords.hash(password.expose()).await?;
        db::whole::run(&mut conn, async |tx| {
            let now = db::now(tx).await?;
            db::users::update(tx, user.id, None, Some(&hash), None, now).await?;
            db::revocations::record(tx, user.id, now).await
        })
        .await
        .context("updating the admin password")?;
        return Ok(());
    }
    anyhow::bail!("the admin account kept changing while it was being created; start again")
}

/// The admin owns the installation's first organizer while it has no
/// other owner, so that it is never left without one.
async fn owner_of_the_first(conn: &mut sqlx::MySqlConnection, admin: UserId) -> anyhow::Result<()> {
    db::organizers::own_first_if_ownerless(conn, admin)
        .await
        .context("making the admin the first organizer's owner")
}
