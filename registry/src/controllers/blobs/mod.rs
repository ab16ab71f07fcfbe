pub mod delete;
pub mod get;
