//! Deterministic parallel gzip: the stack layer's compressor.
//!
//! The input is cut into independent blocks of [`BLOCK_SIZE`] bytes. Each block is
//! deflated on its own (no dictionary shared with the block before it) and ends with a
//! sync flush, so it stops on a byte boundary and the blocks simply follow each other
//! inside one gzip member. A block's bytes depend only on its content, never on which
//! thread compressed it or how many there were: the same input gives the same output
//! on 1, 2 or 16 cores, which keeps bundle digests reproducible.
//!
//! A block whose first [`SAMPLE_SIZE`] bytes do not shrink (provider binaries, zips,
//! images) is stored, not deflated: compressing it again costs time and saves nothing.
//!
//! The output is one ordinary gzip stream that `gzip -t`, `tar -tzf` and every
//! registry client read.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use flate2::{Compress, Compression, FlushCompress, Status};

/// The size of the independent blocks. Part of the output's definition: changing it
/// changes every layer digest.
pub const BLOCK_SIZE: usize = 1 << 20;

/// How much of a block is test-compressed to decide whether deflating it pays.
pub const SAMPLE_SIZE: usize = 64 << 10;

/// The deflate level of compressible blocks.
const LEVEL: u32 = 6;

/// Header: no name, no time, no extra flags, OS "unknown".
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// A final, empty, fixed-Huffman deflate block: ends the stream after the last
/// sync-flushed block.
const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

/// The number of compression threads: `STACKPACK_PACK_THREADS` when set to a positive
/// number (tests pin it to show the output does not depend on it), else the cores.
pub fn default_threads() -> usize {
    std::env::var("STACKPACK_PACK_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
}

struct Block {
    bytes: Vec<u8>,
    crc: crc32fast::Hasher,
}

type Job = (u64, Vec<u8>);
type Done = (u64, io::Result<Block>);

struct Pool {
    jobs: Option<mpsc::SyncSender<Job>>,
    done: mpsc::Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    /// Blocks in flight at most: bounds memory whatever the input size.
    window: u64,
}

/// A `Write` that gzips what it is given, in parallel, into `out`.
pub struct ParallelGzip<W: Write> {
    out: W,
    buffer: Vec<u8>,
    crc: crc32fast::Hasher,
    size: u64,
    pool: Option<Pool>,
    sent: u64,
    written: u64,
    ready: BTreeMap<u64, Block>,
    started: bool,
}

impl<W: Write> ParallelGzip<W> {
    /// A compressor using `threads` worker threads (1: compress on the calling thread).
    pub fn new(out: W, threads: usize) -> Self {
        let pool = (threads > 1).then(|| {
            let window = 2 * threads as u64;
            let (jobs, queue) = mpsc::sync_channel::<Job>(threads);
            let queue = Arc::new(Mutex::new(queue));
            let (report, done) = mpsc::channel::<Done>();
            let workers = (0..threads)
                .map(|_| {
                    let queue = Arc::clone(&queue);
                    let report = report.clone();
                    std::thread::spawn(move || loop {
                        let job = queue.lock().map(|q| q.recv());
                        let Ok(Ok((index, data))) = job else { return };
                        if report.send((index, compress_block(&data))).is_err() {
                            return;
                        }
                    })
                })
                .collect();
            Pool {
                jobs: Some(jobs),
                done,
                workers,
                window,
            }
        });
        ParallelGzip {
            out,
            buffer: Vec::with_capacity(BLOCK_SIZE),
            crc: crc32fast::Hasher::new(),
            size: 0,
            pool,
            sent: 0,
            written: 0,
            ready: BTreeMap::new(),
            started: false,
        }
    }

    fn start(&mut self) -> io::Result<()> {
        if !self.started {
            self.out.write_all(&HEADER)?;
            self.started = true;
        }
        Ok(())
    }

    /// Hands the buffered block to a worker (or compresses it here), then writes out
    /// every finished block that is next in order.
    fn submit(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.start()?;
        let data = std::mem::replace(&mut self.buffer, Vec::with_capacity(BLOCK_SIZE));
        self.size += data.len() as u64;
        let index = self.sent;
        self.sent += 1;
        match &self.pool {
            None => {
                let block = compress_block(&data)?;
                self.ready.insert(index, block);
            }
            Some(pool) => {
                let jobs = pool.jobs.as_ref().expect("open until finish");
                jobs.send((index, data)).map_err(|_| worker_gone())?;
                let window = pool.window;
                while self.sent - self.written > window {
                    self.receive_one()?;
                    self.drain()?;
                }
            }
        }
        self.drain()
    }

    fn receive_one(&mut self) -> io::Result<()> {
        let pool = self.pool.as_ref().expect("only with a pool");
        let (index, block) = pool.done.recv().map_err(|_| worker_gone())?;
        self.ready.insert(index, block?);
        Ok(())
    }

    fn drain(&mut self) -> io::Result<()> {
        while let Some(block) = self.ready.remove(&self.written) {
            self.out.write_all(&block.bytes)?;
            self.crc.combine(&block.crc);
            self.written += 1;
        }
        Ok(())
    }

    /// Compresses what is left, writes the trailer, and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.start()?;
        self.submit()?;
        if let Some(pool) = self.pool.as_mut() {
            pool.jobs = None;
        }
        while self.written < self.sent {
            self.receive_one()?;
            self.drain()?;
        }
        self.out.write_all(&FINAL_BLOCK)?;
        self.out
            .write_all(&self.crc.clone().finalize().to_le_bytes())?;
        // ISIZE is the input size modulo 2^32, as RFC 1952 says.
        self.out.write_all(&(self.size as u32).to_le_bytes())?;
        self.out.flush()?;
        if let Some(pool) = self.pool.take() {
            for worker in pool.workers {
                let _ = worker.join();
            }
        }
        Ok(self.out)
    }
}

impl<W: Write> Write for ParallelGzip<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = BLOCK_SIZE - self.buffer.len();
        let taken = room.min(data.len());
        self.buffer.extend_from_slice(&data[..taken]);
        if self.buffer.len() == BLOCK_SIZE {
            self.submit()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Flushing may not cut a block early: block boundaries define the bytes.
        self.out.flush()
    }
}

fn worker_gone() -> io::Error {
    io::Error::other("a compression thread stopped")
}

/// True when deflating the start of `data` saves under 2%: the block is then stored.
/// The packager asks the same of a large file's first block to decide whether the
/// file travels as a layer of its own, uncompressed.
pub fn incompressible(data: &[u8]) -> bool {
    let sample = &data[..data.len().min(SAMPLE_SIZE)];
    if sample.len() < 4096 {
        return false;
    }
    match deflate(sample, Compression::fast()) {
        Ok(out) => out.len() * 50 >= sample.len() * 49,
        Err(_) => false,
    }
}

fn compress_block(data: &[u8]) -> io::Result<Block> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(data);
    let level = if incompressible(data) {
        Compression::none()
    } else {
        Compression::new(LEVEL)
    };
    Ok(Block {
        bytes: deflate(data, level)?,
        crc,
    })
}

/// Raw deflate of `data`, sync-flushed so that it ends on a byte boundary without
/// marking the stream's end.
fn deflate(data: &[u8], level: Compression) -> io::Result<Vec<u8>> {
    let mut compress = Compress::new(level, false);
    let mut out = Vec::with_capacity(data.len() + data.len() / 64 + 64);
    loop {
        let consumed = compress.total_in() as usize;
        let status = compress
            .compress_vec(&data[consumed..], &mut out, FlushCompress::Sync)
            .map_err(io::Error::other)?;
        let all_in = compress.total_in() as usize == data.len();
        if all_in && out.len() < out.capacity() {
            return Ok(out);
        }
        if status == Status::StreamEnd {
            return Err(io::Error::other("deflate ended early"));
        }
        out.reserve(out.capacity() / 2 + 1024);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gzip(data: &[u8], threads: usize) -> Vec<u8> {
        let mut writer = ParallelGzip::new(Vec::new(), threads);
        // Odd write sizes, so block boundaries never line up with writes.
        for chunk in data.chunks(7919) {
            writer.write_all(chunk).unwrap();
        }
        writer.finish().unwrap()
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// Text that compresses, then random bytes that do not, over several blocks.
    fn mixed(size: usize) -> Vec<u8> {
        let mut data = Vec::with_capacity(size);
        let mut i = 0u64;
        while data.len() < size / 2 {
            data.extend_from_slice(format!("variable \"v{i}\" {{ default = {i} }}\n").as_bytes());
            i += 1;
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        while data.len() < size {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            data.extend_from_slice(&state.to_le_bytes());
        }
        data.truncate(size);
        data
    }

    #[test]
    fn the_bytes_do_not_depend_on_the_thread_count() {
        let data = mixed(5 * BLOCK_SIZE + 12345);
        let one = gzip(&data, 1);
        for threads in [2, 3, 16] {
            assert!(gzip(&data, threads) == one, "{threads} threads differ");
        }
        assert_eq!(gunzip(&one), data);
    }

    #[test]
    fn text_shrinks_and_random_bytes_are_stored_not_grown_much() {
        let data = mixed(4 * BLOCK_SIZE);
        let out = gzip(&data, 2);
        // Half text (compresses well), half random (stored: a few bytes per 64 KiB).
        assert!(
            out.len() < data.len() * 6 / 10,
            "{} of {}",
            out.len(),
            data.len()
        );
        assert!(out.len() > data.len() / 2);
        assert_eq!(gunzip(&out), data);
    }

    #[test]
    fn empty_and_tiny_inputs_are_valid_gzip() {
        for data in [&b""[..], b"x", &[0u8; 100][..]] {
            assert_eq!(gunzip(&gzip(data, 4)), data);
        }
    }

    #[test]
    fn a_failing_writer_is_an_error_not_a_hang() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut writer = ParallelGzip::new(Full, 4);
        let data = mixed(3 * BLOCK_SIZE);
        let result = match writer.write_all(&data) {
            Ok(()) => writer.finish().map(|_| ()),
            Err(e) => Err(e),
        };
        assert!(result.is_err());
    }
}
