//! The packager's integration tests, one binary: `common` runs the real `stackpack`
//! on a copied vendor repository, `acme` calls the library on one, each other module
//! is one area of behaviour. One binary per crate, not one per file: each binary links
//! the whole dependency graph again, and sixty of them once filled a CI disk.

mod acme;
mod common;

mod addresses;
mod advice;
mod attestations;
mod bad_input;
mod check_command;
mod community;
mod customer_new;
mod example_repo;
mod file_layers;
mod forecast;
mod impact;
mod keys;
mod layout_tars;
mod module_packages;
mod module_sources;
mod one_view_of_versions;
mod parsing;
mod promote;
mod providers;
mod publish;
mod release_graph;
mod releases;
mod reproducible;
mod rules;
mod runner_commands;
mod secrets;
mod tamper;
mod transfers;
mod version_truth;
mod versions;
mod witness;
