//! Free space on the file system that holds a directory, checked before a large rewrite
//! (compaction) so a full disk refuses it up front instead of failing halfway through. With
//! `mmap`, the only place in memdex-store that uses `unsafe`: one `statvfs(3)` call.

#![allow(unsafe_code)]

use std::path::Path;

use crate::error::StoreError;

/// Bytes an unprivileged writer may still use on `dir`'s file system (`f_bavail × f_frsize`);
/// `u64::MAX` where the platform cannot say.
pub(crate) fn available_bytes(dir: &Path) -> Result<u64, StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| {
            crate::error::io(dir)(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
        })?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: `path` is NUL-terminated and outlives the call; `st` is valid for writes
        // of one `statvfs`, which the call fills when it returns 0.
        let rc = unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) };
        if rc != 0 {
            return Err(crate::error::io(dir)(std::io::Error::last_os_error()));
        }
        // SAFETY: statvfs returned 0, so it initialised `st`.
        let st = unsafe { st.assume_init() };
        #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
        Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(u64::MAX)
    }
}

/// Refuses `what` when `dir`'s file system has fewer than `needed` bytes free.
pub(crate) fn check_space(dir: &Path, needed: u64, what: String) -> Result<(), StoreError> {
    let available = available_bytes(dir)?;
    if available < needed {
        return Err(StoreError::NoSpace {
            dir: dir.to_path_buf(),
            what,
            needed,
            available,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_has_room_and_no_disk_has_all_of_it() {
        let tmp = std::env::temp_dir();
        assert!(available_bytes(&tmp).is_ok_and(|b| b > 0));
        assert!(check_space(&tmp, 1, "a byte".into()).is_ok());
        let e = check_space(&tmp, u64::MAX, "everything".into()).err();
        let e = e.map(|e| (e.is_disk_full(), e.to_string()));
        let (full, msg) = e.unwrap_or_default();
        assert!(full, "{msg}");
        assert!(
            msg.contains("everything") && msg.contains(&u64::MAX.to_string()),
            "{msg}"
        );
        assert!(available_bytes(Path::new("/no/such/dir")).is_err());
    }
}
