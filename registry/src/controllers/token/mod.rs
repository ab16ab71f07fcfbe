pub mod issue;
