pub mod catalog;
pub mod check;
