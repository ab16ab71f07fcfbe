//! Real registries on 127.0.0.1: CNCF Distribution (Debian's `docker-registry`) and
//! our own `stackpack-registry`. Each stops when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on at the moment of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (up to 20 s) until something accepts connections on `127.0.0.1:port`.
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on 127.0.0.1:{port}");
}

/// CNCF Distribution 2.8 from Debian's `docker-registry`: deletes enabled, no auth.
pub struct Distribution {
    child: Child,
    pub port: u16,
    _data: tempfile::TempDir,
}

impl Distribution {
    /// Starts one, or returns `None` when `docker-registry` is missing (which fails
    /// the test instead where `STACKPACK_REQUIRE_TOOLS` is set).
    pub fn start() -> Option<Distribution> {
        let binary = ["docker-registry", "registry"]
            .into_iter()
            .find(|b| super::on_path(b));
        let Some(binary) = binary else {
            super::have("docker-registry");
            return None;
        };
        let data = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = data.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n  cache:\n    blobdescriptor: inmemory\nhttp:\n  addr: 127.0.0.1:{port}\n",
                data.path().join("storage").display()
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry starts");
        wait_for_port(port);
        Some(Distribution {
            child,
            port,
            _data: data,
        })
    }

    /// Starts one; a test that cannot run without it panics with the install hint.
    pub fn require() -> Distribution {
        Distribution::start().expect(
            "`docker-registry` (Debian package docker-registry) must be installed: run scripts/install-test-deps.sh",
        )
    }

    /// `127.0.0.1:PORT`, as `stackpack --registry` takes it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Where Distribution keeps the content of blob `hex` on disk, for tests that
    /// stand in for a registry whose disk went bad.
    pub fn blob_file(&self, hex: &str) -> PathBuf {
        self._data
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Our `stackpack-registry` serving on 127.0.0.1: the one way every suite starts it.
/// It serves a data folder of its own (made by `serve` itself, as an operator's first
/// run does) or one given ([`OurRegistry::start_on`], say one an older build wrote);
/// it can be killed, stopped gracefully and started again on the same data. Stops
/// when dropped.
pub struct OurRegistry {
    /// The `--data` folder.
    pub data: PathBuf,
    pub port: u16,
    /// Extra `serve` arguments, kept for a restart.
    args: Vec<String>,
    child: Option<Child>,
    _dir: Option<tempfile::TempDir>,
}

impl OurRegistry {
    pub fn start() -> OurRegistry {
        OurRegistry::start_with(&[])
    }

    /// Starts one with extra `serve` arguments (`--max-upload-bytes 1000`, say).
    pub fn start_with(args: &[&str]) -> OurRegistry {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = OurRegistry {
            data: dir.path().join("data"),
            port: 0,
            args: args.iter().map(|s| s.to_string()).collect(),
            child: None,
            _dir: Some(dir),
        };
        registry.spawn();
        registry
    }

    /// Starts one on an existing data folder (one made by an older build, say).
    pub fn start_on(data: PathBuf) -> OurRegistry {
        let mut registry = OurRegistry {
            data,
            port: 0,
            args: Vec::new(),
            child: None,
            _dir: None,
        };
        registry.spawn();
        registry
    }

    /// Starts `serve` on the data folder, on a fresh port, and waits until it accepts
    /// connections. After [`OurRegistry::kill`] or [`OurRegistry::terminate`], this is
    /// a restart on the same data.
    pub fn spawn(&mut self) {
        let port = free_port();
        let child = Command::new(super::binary("stackpack-registry"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(&self.data)
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            // Warnings and panics reach the test's output, which nextest keeps for a
            // failure.
            .stderr(Stdio::inherit())
            .spawn()
            .expect("stackpack-registry starts");
        self.port = port;
        self.child = Some(child);
        wait_for_port(port);
    }

    /// SIGKILL: no chance to clean up, as in a power cut.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then waits for the graceful exit and returns its status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("the registry is running");
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        child.wait().unwrap()
    }

    /// A new token of `role` for this registry (`--customer` where given).
    pub fn token(&self, role: &str, customer: Option<&str>) -> String {
        let mut command = Command::new(super::binary("stackpack-registry"));
        command.args(["token", "create", "--role", role, "--json", "--data"]);
        command.arg(&self.data);
        if let Some(customer) = customer {
            command.args(["--customer", customer]);
        }
        let output = command.output().expect("stackpack-registry runs");
        assert!(
            output.status.success(),
            "token create: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let created: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        created["token"].as_str().unwrap().to_string()
    }

    /// A new publisher token, what `stackpack publish` sends.
    pub fn publisher_token(&self) -> String {
        self.token("publisher", None)
    }

    /// Runs `stackpack-registry ARGS --data <this registry's data>`.
    pub fn run(&self, args: &[&str]) -> super::Run {
        super::Run::from(
            Command::new(super::binary("stackpack-registry"))
                .args(args)
                .arg("--data")
                .arg(&self.data)
                .output()
                .expect("stackpack-registry runs"),
        )
    }

    /// The newest rollout of release (or single stack) `name`, as `rollout status
    /// --json` lists it.
    pub fn newest_rollout(&self, name: &str) -> serde_json::Value {
        let status = self
            .run(&["rollout", "status", "--release", name, "--json"])
            .ok()
            .json();
        let list = status
            .as_array()
            .cloned()
            .or_else(|| status["rollouts"].as_array().cloned())
            .unwrap_or_else(|| panic!("rollout status: {status}"));
        list.into_iter()
            .max_by_key(|r| r["id"].as_i64().unwrap_or(0))
            .unwrap_or_else(|| panic!("no rollout of {name}: {status}"))
    }

    /// `127.0.0.1:PORT`, as `stackpack --registry` takes it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }
}

impl Drop for OurRegistry {
    fn drop(&mut self) {
        self.kill();
    }
}

/// moto, the emulator of the AWS cloud API, on 127.0.0.1: the stand-in for a
/// customer's AWS account (no cloud is reachable here). Started through
/// `scripts/moto.sh`, which corrects three of moto's answers to AWS's own.
pub struct Moto {
    dir: tempfile::TempDir,
    pub url: String,
}

impl Moto {
    pub fn start() -> Moto {
        Moto::start_with(&[])
    }

    /// Started with moto's own settings in `env` (`INITIAL_NO_AUTH_ACTION_COUNT=0`
    /// makes it check credentials as AWS does).
    pub fn start_with(env: &[(&str, &str)]) -> Moto {
        let dir = tempfile::tempdir().unwrap();
        let output = Command::new(super::repository_root().join("scripts/moto.sh"))
            .arg("start")
            .arg(dir.path())
            .envs(env.iter().copied())
            // A test killed outright runs no Drop: the emulator then stops by itself.
            .env("MOTO_OWNER_PID", std::process::id().to_string())
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/moto.sh runs");
        assert!(
            output.status.success(),
            "the AWS API emulator did not start: run scripts/install-test-deps.sh"
        );
        let url = String::from_utf8_lossy(&output.stdout).trim().to_string();
        Moto { dir, url }
    }

    /// What an engine needs to apply against the emulator: the stacks' endpoint
    /// input and test credentials (moto accepts any).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TF_VAR_aws_endpoint", self.url.clone()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("AWS_DEFAULT_REGION", "us-east-1".into()),
        ]
    }

    /// Runs a Python snippet with boto3 against the emulator (a change made by hand
    /// in the customer's account, say); `ENDPOINT` holds its URL.
    pub fn python(&self, code: &str) -> super::Run {
        super::Run::from(
            Command::new("python3")
                .arg("-c")
                .arg(format!("ENDPOINT = {:?}\n{code}", self.url))
                .envs(self.env())
                .output()
                .expect("python3 runs"),
        )
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new(super::repository_root().join("scripts/moto.sh"))
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

/// PostgreSQL (Debian's `postgresql`) as a cluster of its own in a temporary folder,
/// listening on 127.0.0.1 at a free port and on a socket in that folder; never the
/// system service. The server refuses to run as root: as root, the cluster belongs
/// to Debian's `postgres` user (or `nobody` where there is none). Stops when dropped.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    user: Option<String>,
    pub port: u16,
    /// `scripts/postgres-watchdog.sh`, once the cluster runs: stops it should this
    /// process be killed outright; exits by itself once the cluster's folder is gone.
    watchdog: Option<Child>,
}

/// This process's start time, field 22 of `/proc/self/stat` (clock ticks since
/// boot): with the process id it names this process and no later one that reuses
/// the id.
fn own_start_time() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) may hold spaces: count fields after its `)`.
    let after_name = &stat[stat.rfind(')').expect("a `)` in /proc/self/stat") + 2..];
    after_name
        .split(' ')
        .nth(19)
        .expect("field 22 of /proc/self/stat")
        .to_string()
}

impl Postgres {
    /// Starts one, panicking with the install hint when PostgreSQL is missing.
    pub fn start() -> Postgres {
        let bin = postgres_bin().expect(
            "PostgreSQL's `initdb` is neither on PATH nor in /usr/lib/postgresql: \
             run scripts/install-test-deps.sh",
        );
        let user = postgres_user();
        let dir = tempfile::tempdir().unwrap();
        if let Some(user) = &user {
            let chowned = Command::new("chown")
                .arg(user)
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(chowned.success(), "chown `{user}` of the cluster's folder");
        }
        let mut server = Postgres {
            dir,
            bin,
            user,
            port: free_port(),
            watchdog: None,
        };
        let data = server.dir.path().join("data");
        server.run_as(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "stackpack".as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        server.start_cluster();
        server.watchdog = Some(server.watch());
        server
    }

    /// `pg_ctl start` on this cluster's folder and port, waiting until it accepts
    /// connections.
    fn start_cluster(&self) {
        let data = self.dir.path().join("data");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log");
        self.run_as(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        );
    }

    /// Stops the server (`pg_ctl stop -m fast`: its clients' connections are
    /// closed), keeping its data, as a database restarted or failed over does;
    /// [`Postgres::restart`] starts it again on the same port.
    pub fn stop(&self) {
        let data = self.dir.path().join("data");
        self.run_as(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    /// Starts a server [`Postgres::stop`]ped, on the same port with the same data.
    pub fn restart(&self) {
        self.start_cluster();
    }

    /// Starts the watchdog that stops this cluster when this process is killed
    /// outright (no Drop runs then, and `pg_ctl` detached the server from us). It
    /// runs in a process group of its own, so a test runner killing the test's
    /// group leaves it to do its work, and holds none of our output pipes, so a
    /// runner reading them to the end is not kept waiting.
    fn watch(&self) -> Child {
        use std::os::unix::process::CommandExt;
        Command::new(super::repository_root().join("scripts/postgres-watchdog.sh"))
            .arg(std::process::id().to_string())
            .arg(own_start_time())
            .arg(self.dir.path())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("scripts/postgres-watchdog.sh runs")
    }

    /// The folder the cluster lives in (its data in `data/`, its log in `log`).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// `postgres://stackpack@127.0.0.1:PORT/postgres`: the superuser `initdb` made,
    /// trusted on loopback.
    pub fn url(&self) -> String {
        format!("postgres://stackpack@127.0.0.1:{}/postgres", self.port)
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        }
    }

    fn run_as(&self, program: &str, args: &[&std::ffi::OsStr]) {
        let output = self
            .command(program)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("`{program}` runs: {e}"));
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        assert!(
            output.status.success(),
            "`{program}` failed: {}{}\n{log}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        // Stopped: the watchdog has nothing left to do.
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

/// The folder holding `initdb` and `pg_ctl`: on PATH, or Debian's
/// `/usr/lib/postgresql/VERSION/bin` (not on PATH), the newest there.
fn postgres_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

/// Who runs the cluster: nobody else when we are not root; as root, `postgres`
/// where Debian's package made that user, else `nobody`.
fn postgres_user() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return None;
    }
    let has_postgres = Command::new("id")
        .arg("postgres")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    Some(if has_postgres { "postgres" } else { "nobody" }.to_string())
}
