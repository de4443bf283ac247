//! Whether a workspace is on this machine's own disks or memory, where a read cannot hang for
//! long: its root's filesystem, and every filesystem mounted inside it, of a kind known to be
//! local. One on a network (NFS, SMB, Ceph…), a FUSE mount (sshfs…), or of a kind not known is
//! not: a read there can wait on a server without end.

use std::path::Path;

/// Filesystems of a machine's own disks and memory: their magic numbers (linux/magic.h), as
/// `statfs` gives them, and their names, as `/proc/self/mountinfo` does.
const LOCAL: &[(u64, &[&str])] = &[
    (0xEF53, &["ext2", "ext3", "ext4"]),
    (0x5846_5342, &["xfs"]),
    (0x9123_683E, &["btrfs"]),
    (0x0102_1994, &["tmpfs"]),
    (0x8584_58F6, &["ramfs"]),
    (0x794C_7630, &["overlay"]),
    (0xF2F5_2010, &["f2fs"]),
    (0x2FC1_2FC1, &["zfs"]),
    (0xCA45_1A4E, &["bcachefs"]),
    (0x3153_464A, &["jfs"]),
    (0x5265_4973, &["reiserfs"]),
    (0x7371_7368, &["squashfs"]),
    (0x2011_BAB0, &["exfat"]),
    (0x4D44, &["vfat", "msdos"]),
    (0x7366_746E, &["ntfs3"]),
];

/// Whether `root` (canonical) and everything mounted inside it is local.
pub(super) fn on_local_disk(root: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        let kind = rustix::fs::statfs(root).map(|fs| fs.f_type as u64);
        kind.is_ok_and(is_local_kind)
            && std::fs::read_to_string("/proc/self/mountinfo")
                .is_ok_and(|mounts| mounted_inside_are_local(&mounts, root))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        false
    }
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn is_local_kind(kind: u64) -> bool {
    LOCAL.iter().any(|(magic, _)| *magic == kind)
}

/// Whether every filesystem `mountinfo` (the text of `/proc/self/mountinfo`) has mounted at or
/// under `root` is of a local kind. A line it cannot read counts as not local.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn mounted_inside_are_local(mountinfo: &str, root: &Path) -> bool {
    mountinfo.lines().all(|line| {
        // "36 35 98:0 /mnt1 /mnt/point rw,noatime master:1 - ext3 /dev/root rw": the mount
        // point is the fifth field, the kind the first after " - ".
        let Some((mount, kind)) = line.split_once(" - ") else {
            return false;
        };
        let Some(point) = mount.split(' ').nth(4) else {
            return false;
        };
        if !Path::new(&unescape(point)).starts_with(root) {
            return true;
        }
        let kind = kind.split(' ').next().unwrap_or("");
        LOCAL.iter().any(|(_, names)| names.contains(&kind))
    })
}

/// A mount point as mountinfo writes it, with space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                let value = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    /// A workspace on this machine's disk reads in place; one on a network or FUSE filesystem,
    /// or one of a kind not known, does not.
    #[test]
    fn only_known_local_filesystems_count_as_local() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert!(
            on_local_disk(&root),
            "a temporary folder is on a local disk"
        );
        // Asked through a workspace, and through a clone of it, which shares the answer.
        let workspace = super::super::Workspace::open(&root, None).unwrap();
        assert!(workspace.clone().is_local() && workspace.is_local());
        for local in [0xEF53, 0x0102_1994, 0x794C_7630] {
            assert!(is_local_kind(local), "{local:#x}");
        }
        // NFS, SMB2, CIFS, FUSE, Ceph, 9p, and nothing at all.
        for remote in [
            0x6969,
            0xFE53_4D42,
            0xFF53_4D42,
            0x6573_5546,
            0x00C3_6400,
            0x0102_1997,
            0,
        ] {
            assert!(!is_local_kind(remote), "{remote:#x}");
        }
    }

    /// A network or FUSE mount inside the workspace makes it not local, wherever it is mounted
    /// and however its name is escaped; mounts elsewhere do not matter.
    #[test]
    fn a_remote_mount_inside_the_workspace_makes_it_not_local() {
        let mounts = |lines: &[&str]| lines.join("\n");
        let root = Path::new("/home/ann/my project");
        let base = [
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
            "30 22 0:25 / /mnt/nas rw shared:5 - nfs4 nas:/export rw",
        ];
        assert!(mounted_inside_are_local(&mounts(&base), root));
        let sshfs = "40 22 0:50 / /home/ann/my\\040project/data rw - fuse.sshfs host: rw";
        assert!(!mounted_inside_are_local(&mounts(&[base[0], sshfs]), root));
        let tmp = "41 22 0:51 / /home/ann/my\\040project/tmp rw - tmpfs tmpfs rw";
        assert!(mounted_inside_are_local(&mounts(&[base[0], tmp]), root));
        let beside = "42 22 0:52 / /home/ann/my\\040project2 rw - cifs //h/s rw";
        assert!(
            mounted_inside_are_local(&mounts(&[base[0], beside]), root),
            "a sibling"
        );
        assert!(!mounted_inside_are_local("garbled line", root));
        assert_eq!(unescape("a\\040b\\134c\\0"), "a b\\c\\0");
    }
}
