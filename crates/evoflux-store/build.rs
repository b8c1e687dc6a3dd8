//! `sqlx::migrate!` embeds the migration files at compile time; rebuild when
//! they change so a new migration is never silently left out.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
