//! What the fuzz targets share.

/// `stream` cut at `cuts` (each taken modulo its length + 1, in order): pieces that join to it.
pub fn pieces<'a>(stream: &'a [u8], cuts: &[u16]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c) % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push(&stream[start..cut]);
        start = cut;
    }
    pieces.push(&stream[start..]);
    pieces
}
