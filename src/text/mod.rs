//! Offline text analysis used by the memory services: sentence segmentation and atomic memories
//! from long notes, category inference, and the fact-update (supersession) detector. Pure
//! functions, std only, no I/O.

pub mod atomize;
pub mod category;
pub mod chunk;
pub mod extract;
pub mod lexicon;
pub mod specifics;
pub mod supersession;
pub mod words;
