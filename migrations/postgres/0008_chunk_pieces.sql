-- Chunk pieces (issue 4): a chunk longer than the model reads best is also embedded piece by
-- piece (passages of about 128 wordpieces); a search reads a chunk's vector similarity as the
-- best of its own and its pieces'. The vectors are stored one after the other, little-endian
-- f32, each as long as `vector`. NULL: the chunk is read whole only.
ALTER TABLE vault_chunks ADD COLUMN piece_vectors BYTEA NULL;
