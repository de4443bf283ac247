//! Files whose kind and size nobody vouches for (ones an agent names, a record in the data
//! folder): opened without following a link or blocking on a FIFO, read only up to a bound.

/// Opens a file someone else may have put in place (an agent names it, or it lies in a folder
/// others can write), for reading, as untrusted input: never through a symbolic link
/// (its last part), never blocking (a FIFO or a device is refused at once, not waited on), and
/// only a regular file. Returns the open file and its size.
pub(crate) fn open_untrusted(path: &std::path::Path) -> std::io::Result<(std::fs::File, u64)> {
    open_regular(path, rustix::fs::OFlags::NOFOLLOW)
}

/// [`open_untrusted`], with `extra` open flags (`NOFOLLOW`, or none for a person's own settings
/// file, which dotfile managers make a link). A missing file is `NotFound`.
pub(crate) fn open_regular(
    path: &std::path::Path,
    extra: rustix::fs::OFlags,
) -> std::io::Result<(std::fs::File, u64)> {
    use rustix::fs::{FileType, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | extra;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|errno| {
        if errno == rustix::io::Errno::LOOP {
            std::io::Error::other("a symbolic link, which is not followed")
        } else {
            std::io::Error::from(errno)
        }
    })?;
    let stat = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        let what = match kind {
            FileType::Fifo => "a named pipe (FIFO)",
            FileType::Directory => "a folder",
            FileType::CharacterDevice | FileType::BlockDevice => "a device",
            FileType::Socket => "a socket",
            _ => "not a regular file",
        };
        return Err(std::io::Error::other(format!("{what}, not a regular file")));
    }
    Ok((
        std::fs::File::from(fd),
        u64::try_from(stat.st_size).unwrap_or(0),
    ))
}

/// At most `max` bytes from `offset` of a file opened by [`open_untrusted`] (it may grow while
/// it is read: what is past `max` is never read).
pub(crate) fn read_bounded(
    mut file: std::fs::File,
    offset: u64,
    max: u64,
) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The whole text of a file opened by [`open_regular`], at most `max` bytes even if it grows
/// while it is read: larger than that, or not UTF-8, is an error saying so.
pub(crate) fn read_text(file: std::fs::File, max: u64) -> std::io::Result<String> {
    let bytes = read_bounded(file, 0, max + 1)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than {max} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}
