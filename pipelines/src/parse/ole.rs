//! OLE compound files (MS-CFB), the container of legacy `.xls` workbooks: a strict reader that
//! takes one stream out, and a writer that puts one stream into a fresh, minimal container.
//!
//! calamine's own reader follows sector chains until they end, so a chain that loops grows a
//! buffer without end, and it reads a stream as long as its directory entry claims. Legacy
//! workbooks are therefore read here first: every chain is walked with a visited set (a sector
//! seen twice is a loop), no chain is longer than the file has sectors, and a stream is never
//! longer than the file. The workbook stream is then checked ([`super::xls_guard`]) and handed
//! to calamine in a container written by [`single_stream`], so calamine only ever reads a
//! well-formed file holding exactly the bytes that were checked.

use super::ParseError;

const MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
/// Sector ids at or above this are markers, not sectors.
const MAX_REGULAR: u32 = 0xFFFF_FFFA;
const DIFAT_SECTOR: u32 = 0xFFFF_FFFC;
const FAT_SECTOR: u32 = 0xFFFF_FFFD;
const END_OF_CHAIN: u32 = 0xFFFF_FFFE;
const FREE: u32 = 0xFFFF_FFFF;
const NO_STREAM: u32 = 0xFFFF_FFFF;
/// Streams shorter than this live in the mini stream (calamine uses the same fixed cutoff).
const MINI_CUTOFF: u64 = 4096;
const MINI_SECTOR: usize = 64;
const HEADER_DIFAT: usize = 109;

const KIND: &str = "xls";

fn corrupt(detail: &str) -> ParseError {
    ParseError::corrupt(KIND, detail)
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

struct Entry {
    name: String,
    start: u32,
    size: u64,
}

/// A compound file whose header, FAT and directory were read and found consistent.
pub(crate) struct Compound<'a> {
    /// The sectors after the header (the last one may be short: it reads as zero-padded).
    body: &'a [u8],
    sector: usize,
    sectors: usize,
    fat: Vec<u32>,
    mini_fat_start: u32,
    entries: Vec<Entry>,
}

impl<'a> Compound<'a> {
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Compound<'a>, ParseError> {
        if bytes.len() < 512 || bytes[..8] != MAGIC {
            return Err(corrupt("not an ole compound file"));
        }
        let sector = match u16_at(bytes, 30) {
            9 => 512,
            12 => 4096,
            _ => return Err(corrupt("the compound file has an unknown sector size")),
        };
        if u16_at(bytes, 32) != 6 {
            return Err(corrupt("the compound file has an unknown mini sector size"));
        }
        if bytes.len() < sector {
            return Err(corrupt("the compound file is truncated"));
        }
        let body = &bytes[sector..];
        let sectors = body.len().div_ceil(sector);
        let mut file = Compound {
            body,
            sector,
            sectors,
            fat: Vec::new(),
            mini_fat_start: u32_at(bytes, 60),
            entries: Vec::new(),
        };

        // The FAT's sectors: 109 ids in the header, then a chain of DIFAT sectors.
        let mut fat_ids: Vec<u32> = (0..HEADER_DIFAT)
            .map(|i| u32_at(bytes, 76 + 4 * i))
            .collect();
        let per_sector = sector / 4;
        let mut next = u32_at(bytes, 68);
        let mut seen = vec![false; sectors];
        while next < MAX_REGULAR {
            let data = file.sector_data(next, &mut seen)?;
            fat_ids.extend((0..per_sector - 1).map(|i| u32_at(&data, 4 * i)));
            next = u32_at(&data, 4 * (per_sector - 1));
        }
        let fat_ids: Vec<u32> = fat_ids.into_iter().filter(|id| *id < MAX_REGULAR).collect();
        if fat_ids.len() > sectors {
            return Err(corrupt(
                "the compound file lists more fat sectors than it has sectors",
            ));
        }
        let mut fat = Vec::with_capacity(fat_ids.len() * per_sector);
        for id in fat_ids {
            let data = file.sector_data(id, &mut seen)?;
            fat.extend((0..per_sector).map(|i| u32_at(&data, 4 * i)));
        }
        file.fat = fat;

        // The directory: 128-byte entries along its chain.
        let dir = file.chain(u32_at(bytes, 48), None)?;
        for chunk in dir.chunks_exact(128) {
            let units: Vec<u16> = chunk[..64]
                .chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .take_while(|u| *u != 0)
                .collect();
            let size = if sector == 512 {
                u64::from(u32_at(chunk, 120))
            } else {
                u64::from_le_bytes(chunk[120..128].try_into().unwrap_or([0; 8]))
            };
            file.entries.push(Entry {
                name: String::from_utf16_lossy(&units),
                start: u32_at(chunk, 116),
                size,
            });
        }
        if file.entries.is_empty() {
            return Err(corrupt("the compound file has no directory"));
        }
        Ok(file)
    }

    /// One sector, zero-padded if the file ends inside it; `seen` marks it used.
    fn sector_data(&self, id: u32, seen: &mut [bool]) -> Result<Vec<u8>, ParseError> {
        let index = id as usize;
        if index >= self.sectors {
            return Err(corrupt("a sector lies past the end of the compound file"));
        }
        if std::mem::replace(&mut seen[index], true) {
            return Err(corrupt("the compound file's sector chains loop"));
        }
        let start = index * self.sector;
        let end = (start + self.sector).min(self.body.len());
        let mut data = self.body[start..end].to_vec();
        data.resize(self.sector, 0);
        Ok(data)
    }

    /// The bytes of the regular-sector chain from `start`: up to `len` bytes, or the whole
    /// chain. A chain that visits a sector twice is a loop.
    fn chain(&self, start: u32, len: Option<u64>) -> Result<Vec<u8>, ParseError> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.sectors];
        let mut id = start;
        while id != END_OF_CHAIN {
            if len.is_some_and(|len| out.len() as u64 >= len) {
                break;
            }
            if id as usize >= self.fat.len() {
                return Err(corrupt("a sector chain leaves the compound file"));
            }
            out.extend_from_slice(&self.sector_data(id, &mut seen)?);
            id = self.fat[id as usize];
        }
        if let Some(len) = len {
            out.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        }
        Ok(out)
    }

    /// The stream named `name` (case-insensitive, the first entry of that name, as calamine
    /// finds it), or `None` when there is none.
    pub(crate) fn stream(&self, name: &str) -> Result<Option<Vec<u8>>, ParseError> {
        let Some(entry) = self
            .entries
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
        else {
            return Ok(None);
        };
        if entry.size > (self.sectors * self.sector) as u64 {
            return Err(corrupt("a stream claims to be larger than the file"));
        }
        if entry.size >= MINI_CUTOFF {
            return self.chain(entry.start, Some(entry.size)).map(Some);
        }
        // A short stream: mini sectors inside the root entry's stream, chained by the mini FAT.
        let root = &self.entries[0];
        let mini_stream = self.chain(root.start, Some(root.size))?;
        let mini_fat: Vec<u32> = self
            .chain(self.mini_fat_start, None)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut out = Vec::new();
        let mut seen = vec![false; mini_fat.len()];
        let mut id = entry.start;
        while id != END_OF_CHAIN && (out.len() as u64) < entry.size {
            let index = id as usize;
            if index >= mini_fat.len() {
                return Err(corrupt("a mini sector chain leaves the compound file"));
            }
            if std::mem::replace(&mut seen[index], true) {
                return Err(corrupt("the compound file's mini sector chains loop"));
            }
            let start = index * MINI_SECTOR;
            let Some(data) = mini_stream.get(start..start + MINI_SECTOR) else {
                return Err(corrupt(
                    "a mini sector lies past the end of the mini stream",
                ));
            };
            out.extend_from_slice(data);
            id = mini_fat[index];
        }
        out.truncate(entry.size as usize);
        Ok(Some(out))
    }
}

/// `data` zero-padded to 4096 bytes, so that as a stream it lives in regular sectors and
/// needs no mini stream: what [`single_stream`] stores, and what a reader of it sees.
pub(crate) fn padded(data: &[u8]) -> Vec<u8> {
    let mut data = data.to_vec();
    if data.len() < MINI_CUTOFF as usize {
        data.resize(MINI_CUTOFF as usize, 0);
    }
    data
}

/// A version-3 compound file (512-byte sectors) holding one stream, `name`, with `data`
/// ([`padded`]).
pub(crate) fn single_stream(name: &str, data: &[u8]) -> Vec<u8> {
    const SECTOR: usize = 512;
    const IDS: usize = SECTOR / 4;
    let data = padded(data);
    let stream_sectors = data.len().div_ceil(SECTOR);
    // Sectors: the stream, one directory sector, the FAT, then DIFAT sectors if the FAT needs
    // more than the header's 109 slots.
    let (mut fat_sectors, mut difat_sectors) = (1, 0);
    loop {
        let total = stream_sectors + 1 + fat_sectors + difat_sectors;
        let fat = total.div_ceil(IDS);
        let difat = fat.saturating_sub(HEADER_DIFAT).div_ceil(IDS - 1);
        if (fat, difat) == (fat_sectors, difat_sectors) {
            break;
        }
        (fat_sectors, difat_sectors) = (fat, difat);
    }
    let dir_id = stream_sectors;
    let fat_first = dir_id + 1;
    let difat_first = fat_first + fat_sectors;
    let total = difat_first + difat_sectors;

    let mut fat = vec![FREE; fat_sectors * IDS];
    for (i, slot) in fat.iter_mut().enumerate().take(stream_sectors) {
        *slot = if i + 1 == stream_sectors {
            END_OF_CHAIN
        } else {
            (i + 1) as u32
        };
    }
    fat[dir_id] = END_OF_CHAIN;
    for slot in &mut fat[fat_first..difat_first] {
        *slot = FAT_SECTOR;
    }
    for slot in &mut fat[difat_first..total] {
        *slot = DIFAT_SECTOR;
    }
    let fat_ids: Vec<u32> = (fat_first..difat_first).map(|i| i as u32).collect();

    let mut out = Vec::with_capacity((total + 1) * SECTOR);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&0x003Eu16.to_le_bytes());
    out.extend_from_slice(&3u16.to_le_bytes());
    out.extend_from_slice(&0xFFFEu16.to_le_bytes());
    out.extend_from_slice(&9u16.to_le_bytes());
    out.extend_from_slice(&6u16.to_le_bytes());
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&0u32.to_le_bytes()); // directory sectors (0 in version 3)
    out.extend_from_slice(&(fat_sectors as u32).to_le_bytes());
    out.extend_from_slice(&(dir_id as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // transaction signature
    out.extend_from_slice(&(MINI_CUTOFF as u32).to_le_bytes());
    out.extend_from_slice(&END_OF_CHAIN.to_le_bytes()); // no mini FAT
    out.extend_from_slice(&0u32.to_le_bytes());
    let difat_start = if difat_sectors > 0 {
        difat_first as u32
    } else {
        END_OF_CHAIN
    };
    out.extend_from_slice(&difat_start.to_le_bytes());
    out.extend_from_slice(&(difat_sectors as u32).to_le_bytes());
    for i in 0..HEADER_DIFAT {
        let id = fat_ids.get(i).copied().unwrap_or(FREE);
        out.extend_from_slice(&id.to_le_bytes());
    }
    debug_assert_eq!(out.len(), SECTOR);

    out.extend_from_slice(&data);
    out.resize(SECTOR * (1 + stream_sectors), 0);

    let entry = |name: &str, kind: u8, child: u32, start: u32, size: u32| {
        let mut e = vec![0u8; 128];
        let units: Vec<u16> = name.encode_utf16().take(31).collect();
        for (i, u) in units.iter().enumerate() {
            e[2 * i..2 * i + 2].copy_from_slice(&u.to_le_bytes());
        }
        if kind != 0 {
            e[64..66].copy_from_slice(&((units.len() as u16 + 1) * 2).to_le_bytes());
        }
        e[66] = kind;
        e[67] = 1; // black
        e[68..72].copy_from_slice(&NO_STREAM.to_le_bytes());
        e[72..76].copy_from_slice(&NO_STREAM.to_le_bytes());
        e[76..80].copy_from_slice(&child.to_le_bytes());
        e[116..120].copy_from_slice(&start.to_le_bytes());
        e[120..124].copy_from_slice(&size.to_le_bytes());
        e
    };
    out.extend(entry("Root Entry", 5, 1, END_OF_CHAIN, 0));
    out.extend(entry(name, 2, NO_STREAM, 0, data.len() as u32));
    out.extend(entry("", 0, NO_STREAM, 0, 0));
    out.extend(entry("", 0, NO_STREAM, 0, 0));

    for id in &fat {
        out.extend_from_slice(&id.to_le_bytes());
    }
    // DIFAT sectors: 127 FAT ids each, then the next DIFAT sector.
    let overflow = fat_ids.get(HEADER_DIFAT..).unwrap_or(&[]);
    for d in 0..difat_sectors {
        for i in 0..IDS - 1 {
            let id = overflow.get(d * (IDS - 1) + i).copied().unwrap_or(FREE);
            out.extend_from_slice(&id.to_le_bytes());
        }
        let next = if d + 1 < difat_sectors {
            (difat_first + d + 1) as u32
        } else {
            END_OF_CHAIN
        };
        out.extend_from_slice(&next.to_le_bytes());
    }
    debug_assert_eq!(out.len(), SECTOR * (1 + total));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_stream_reads_back() {
        for len in [10usize, 5000, 70_000, 7_200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let file = single_stream("Workbook", &data);
            let compound = Compound::open(&file).unwrap();
            let back = compound.stream("workbook").unwrap().unwrap();
            assert_eq!(&back[..len], &data[..], "{len}");
            assert!(back[len..].iter().all(|b| *b == 0));
            assert!(compound.stream("Book").unwrap().is_none());
        }
    }

    #[test]
    fn a_looping_chain_is_corrupt() {
        let mut file = single_stream("Workbook", &[1u8; 5000]);
        // The FAT is the sector after the directory: point the stream's second sector back
        // at its first.
        let fat_offset = 512 * (1 + 10 + 1);
        file[fat_offset + 4..fat_offset + 8].copy_from_slice(&0u32.to_le_bytes());
        let compound = Compound::open(&file).unwrap();
        let err = compound.stream("Workbook").unwrap_err();
        assert!(err.to_string().contains("loop"), "{err}");
    }

    #[test]
    fn a_stream_larger_than_the_file_is_corrupt() {
        let mut file = single_stream("Workbook", &[1u8; 5000]);
        let dir = 512 * (1 + 10);
        file[dir + 128 + 120..dir + 128 + 124].copy_from_slice(&u32::MAX.to_le_bytes());
        let compound = Compound::open(&file).unwrap();
        assert!(matches!(
            compound.stream("Workbook"),
            Err(ParseError::Corrupt { .. })
        ));
    }
}
