//! The environment Terraform or OpenTofu gets: an allow-list, the same wherever a
//! Stackpack program runs the engine (the runner in the customer's account, the
//! packager's outcome witness in CI). A variable not named here never reaches it.

/// Variables of the caller's environment the engine gets, by exact name: where
/// programs live, the user and the locale, a proxy and the certificates to trust.
/// Documented in `docs/runner.md` ("The engine's environment").
const ENGINE_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Variables the engine gets by prefix: the locale's categories, and the cloud
/// account's credentials, region and endpoints (the AWS provider reads `AWS_*`).
const ENGINE_VARIABLE_PREFIXES: &[&str] = &["LC_", "AWS_"];

/// True when the caller's variable `name` is passed to the engine (the runner's,
/// and the packager's outcome witness). Everything
/// else is left out, every `TF_*` first among them: `TF_CLI_ARGS*` adds arguments
/// to any command, `TF_WORKSPACE` and `TF_DATA_DIR` move the state and the
/// providers, `TF_PLUGIN_CACHE_DIR` and `TF_CLI_CONFIG_FILE` change where
/// providers come from, and `TF_LOG*` writes every value, secrets too, to a log.
pub fn passes_to_engine(name: &str, input_variables: &[String]) -> bool {
    if let Some(input) = name.strip_prefix("TF_VAR_") {
        return input_variables.iter().any(|known| known == input);
    }
    ENGINE_VARIABLES.contains(&name)
        || ENGINE_VARIABLE_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}
