//! `--rotate`: the three tables as a series of closed Parquet files, a
//! directory per table, a file per period (docs/fleet.md, "Hosts that
//! capture all day").

use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use rttlens_core::model::Connection;

use crate::{ParquetTables, Table};

/// When a series of files moves on to the next ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotate {
    /// Every period of wall-clock time, the files closing on its multiples
    /// since the Unix epoch (`5m`: at :00, :05, :10…).
    Every(Duration),
    /// Once the three files hold this many bytes (counted within about a
    /// sixteenth: the rows reach the Parquet writer in batches).
    Size(u64),
}

impl FromStr for Rotate {
    type Err = String;

    /// `30s`, `5m`, `1h`, `1d` (at least 1 s), or `500kB`, `100MB`, `1GB`
    /// (powers of 1000), `512KiB`, `1MiB`, `1GiB` (powers of 1024), at
    /// least 1 kB.
    fn from_str(s: &str) -> Result<Rotate, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: f64 = num
            .parse()
            .map_err(|_| format!("'{s}': a period (30s, 5m, 1h) or a size (500MB, 1GB)"))?;
        let secs = |k: f64| Rotate::Every(Duration::from_secs_f64(n * k));
        let bytes = |k: f64| Rotate::Size((n * k) as u64);
        let r = match unit.trim() {
            "s" => secs(1.0),
            "m" | "min" => secs(60.0),
            "h" => secs(3600.0),
            "d" => secs(86_400.0),
            "kB" | "KB" | "k" => bytes(1e3),
            "MB" | "M" => bytes(1e6),
            "GB" | "G" => bytes(1e9),
            "KiB" => bytes(1024.0),
            "MiB" => bytes(1024.0 * 1024.0),
            "GiB" => bytes(1024.0 * 1024.0 * 1024.0),
            u => {
                return Err(format!(
                    "'{s}': unknown unit `{u}` (s, m, h, d for a period; kB, MB, GB, KiB, MiB, GiB for a size)"
                ))
            }
        };
        match r {
            Rotate::Every(d)
                if d < Duration::from_secs(1) || d > Duration::from_secs(366 * 86_400) =>
            {
                Err(format!("'{s}': the period must be from 1s to a year"))
            }
            Rotate::Size(b) if b < 1000 => Err(format!("'{s}': the size must be at least 1kB")),
            r => Ok(r),
        }
    }
}

impl Rotate {
    /// The end of the period that contains `t` (its next multiple of the
    /// period since the epoch); `None` for a size.
    pub fn period_end(self, t: SystemTime) -> Option<SystemTime> {
        let Rotate::Every(p) = self else { return None };
        let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let p_ns = p.as_nanos().max(1);
        let next = (since.as_nanos() / p_ns + 1) * p_ns;
        let next = Duration::new(
            u64::try_from(next / 1_000_000_000).unwrap_or(u64::MAX),
            u32::try_from(next % 1_000_000_000).unwrap_or(0),
        );
        Some(SystemTime::UNIX_EPOCH + next)
    }
}

/// The three tables as closed Parquet files in `DIR/connections/`,
/// `DIR/findings/` and `DIR/requests/`, a file of each per period, named by
/// the UTC time the period began (`20261128T120500Z.parquet`; `-1`, `-2`…
/// when a name is taken). Each file is written as `.NAME.parquet.partial`
/// in its table's directory and renamed when complete, so the directory
/// never shows half a file to a shipper.
pub struct RotatingParquet {
    dir: PathBuf,
    source: String,
    size: Option<u64>,
    current: Option<ParquetTables>,
    files: u64,
}

impl RotatingParquet {
    /// The first files, for a period beginning at `start`; `rotate`'s size,
    /// when it is one, closes them once they hold that many bytes.
    ///
    /// # Errors
    /// A directory or a file could not be created.
    pub fn create(
        dir: &Path,
        source: &str,
        rotate: Rotate,
        start: SystemTime,
    ) -> io::Result<RotatingParquet> {
        for t in Table::ALL {
            std::fs::create_dir_all(dir.join(t.name()))?;
        }
        let mut r = RotatingParquet {
            dir: dir.to_path_buf(),
            source: source.to_string(),
            size: match rotate {
                Rotate::Size(b) => Some(b),
                Rotate::Every(_) => None,
            },
            current: None,
            files: 0,
        };
        r.current = Some(r.open(start)?);
        Ok(r)
    }

    fn open(&mut self, start: SystemTime) -> io::Result<ParquetTables> {
        let stamp = utc_stamp(start);
        let mut n = 0u32;
        loop {
            let name = match n {
                0 => stamp.clone(),
                n => format!("{stamp}-{n}"),
            };
            let files = Table::ALL.map(|t| {
                let d = self.dir.join(t.name());
                (
                    d.join(format!("{name}.parquet")),
                    d.join(format!(".{name}.parquet.partial")),
                )
            });
            if files.iter().all(|(f, p)| !f.exists() && !p.exists()) {
                // by size: batches of about a sixteenth of it (at ~1 kB a
                // row), so the size is counted within that much
                let rows = self.size.map_or(crate::BATCH_ROWS, |b| {
                    usize::try_from(b / 16_000).unwrap_or(usize::MAX).max(1)
                });
                return ParquetTables::create_files(files, &self.source, rows);
            }
            n += 1;
        }
    }

    /// Adds `c`'s rows; with a size, closes the files once they reach it
    /// (the next ones begin now).
    ///
    /// # Errors
    /// Writing failed.
    pub fn push(&mut self, c: &Connection) -> io::Result<()> {
        let Some(t) = &mut self.current else {
            return Ok(());
        };
        t.push(c)?;
        if self.size.is_some_and(|max| t.bytes() >= max) {
            self.rotate(SystemTime::now())?;
        }
        Ok(())
    }

    /// Closes the files and opens the next ones, for a period beginning at
    /// `start`.
    ///
    /// # Errors
    /// Closing or creating a file failed.
    pub fn rotate(&mut self, start: SystemTime) -> io::Result<()> {
        if let Some(t) = self.current.take() {
            t.finish()?;
            self.files += 1;
        }
        self.current = Some(self.open(start)?);
        Ok(())
    }

    /// Closes the last files; the number of periods written.
    ///
    /// # Errors
    /// Closing a file failed.
    pub fn finish(mut self) -> io::Result<u64> {
        if let Some(t) = self.current.take() {
            t.finish()?;
            self.files += 1;
        }
        Ok(self.files)
    }
}

/// `t` in UTC as `YYYYMMDDTHHMMSSZ` (ISO 8601's basic format: sorts as it
/// reads, no `:` in a file name).
fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    let dt =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_sizes_parse() {
        assert_eq!("5m".parse(), Ok(Rotate::Every(Duration::from_secs(300))));
        assert_eq!("30s".parse(), Ok(Rotate::Every(Duration::from_secs(30))));
        assert_eq!("1h".parse(), Ok(Rotate::Every(Duration::from_secs(3600))));
        assert_eq!("1GB".parse(), Ok(Rotate::Size(1_000_000_000)));
        assert_eq!("500MB".parse(), Ok(Rotate::Size(500_000_000)));
        assert_eq!("1GiB".parse(), Ok(Rotate::Size(1 << 30)));
        for bad in ["", "5", "5x", "0s", "100ms", "10B", "GB"] {
            assert!(bad.parse::<Rotate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_period_ends_on_its_multiple_since_the_epoch() {
        let r = Rotate::Every(Duration::from_secs(300));
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(r.period_end(at(1_795_867_201)), Some(at(1_795_867_500)));
        assert_eq!(r.period_end(at(1_795_867_500)), Some(at(1_795_867_800)));
        assert_eq!(Rotate::Size(1000).period_end(at(5)), None);
    }

    #[test]
    fn stamps_are_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_867_500);
        assert_eq!(utc_stamp(t), "20261128T120500Z");
    }
}
