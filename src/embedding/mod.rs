//! Embeddings: a neural sentence encoder turns text into a unit vector so that memories can be
//! found by meaning. The default runs in-process and offline (all-MiniLM-L6-v2 through candle);
//! an OpenAI-compatible endpoint can be configured instead.
//!
//! Encoding is CPU work: it runs on tokio's blocking threads, never on the async workers or an
//! actor's mailbox. Query vectors are cached (moka), so a repeated query costs nothing.

mod bert;
mod local;
mod remote;

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

pub use bert::{products_for, Products};
pub use local::{set_inference_environment, LocalEmbedder};
/// Whether those products run on AMX tiles here (AMX-TILE and AMX-BF16, granted by Linux).
pub use memvault_kernels::bf16::amx_supported as bf16_amx_supported;
/// Whether this CPU runs the bfloat16 products of `embedding_precision = "bf16"`.
pub use memvault_kernels::bf16::supported as bf16_supported;
pub use remote::RemoteEmbedder;

/// Texts sent to an embedding server in one request, and single saves gathered into one
/// encoding by the batcher, at most. (The local model cuts its own batches by a token budget.)
pub const BATCH_SIZE: usize = 32;

/// How long the batcher waits for the rest of a batch (see [`Embeddings`]).
pub const GATHER_WINDOW: Duration = Duration::from_millis(5);

/// Batches the batcher has in the encoder at once (see [`Embeddings`]).
pub const PASSES: usize = 2;

/// Groups of saving clients a pass serves in turn: while one group's texts are encoded, the
/// other's saves finish and come back (see [`Embeddings`]).
pub const GROUPS: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "the embedding model is not installed in {dir}: run `scripts/install-model.sh` \
         (or set MEMVAULT_EMBEDDING_MODEL_DIR to where it is, or MEMVAULT_EMBEDDINGS_URL to use \
         an embedding server)"
    )]
    ModelMissing { dir: String },
    #[error("cannot load the embedding model: {0}")]
    Load(String),
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error("embedding server error: {0}")]
    Remote(String),
}

/// A sentence encoder.
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// The model's name, stored beside every vector it made.
    fn model(&self) -> &str;
    fn dimensions(&self) -> usize;
    /// One unit-length vector per text, in order.
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// A text waiting for the batcher, with where its vector goes.
struct Pending {
    text: String,
    reply: oneshot::Sender<Result<Vec<f32>, EmbedError>>,
}

/// The encoder with a cache of query vectors and a batcher for single documents.
///
/// Single documents (one save each) are queued: a task takes the texts waiting, up to a
/// share of the load, and encodes them in one call, so concurrent saves share the model
/// instead of queueing for one pass each. Clients that saved together come back a few
/// milliseconds apart (each finishes its save and sends the next), so taking only what is
/// waiting would encode them in passes of uneven size, many of 1 to 3 texts. A pass waits for
/// its share instead ([`gather_target`]: an even share, among [`GROUPS`] groups a pass, of the
/// most texts the batcher held or expected lately, counting the saves in progress,
/// [`Embeddings::writing`]): beside a running pass, until it has that many or that pass ends;
/// with the encoder idle, up to [`GATHER_WINDOW`]. It takes no more than its share: the rest
/// wait for the next pass. A lone client never waits.
///
/// Up to [`PASSES`] batches are encoded at once: a pass of a few texts leaves cores idle in
/// its serial parts (tokenizing, allocating, the steps between two parallel products), and a
/// second pass fills them. (The local model runs a pass that starts beside another on a thread
/// of its own, so the two do not hand each product's parts between threads: [`LocalEmbedder`].)
/// With 16 clients saving at once (20,000 memories, 2 cores; docs/BENCHMARKS.md), a second
/// pass raised the saves from 203 to 220-224 a second on an AMD EPYC. On an Intel Xeon, passes
/// that started with whatever was waiting held 1 to 14 texts (4.8 on average, a third of them
/// 1 to 3: 113 saves a second); waiting for three quarters of a share of the texts held, they
/// settled into three groups of 5 or 6 (125); counting the saves in progress, into two of 8
/// (134). The import does not go through the batcher: it encodes its own batches.
///
/// Why [`GROUPS`] groups a pass: with one, the 16 clients moved as two groups of 8, one in
/// each pass, and a pass's core waited while its own group finished their saves (reading the
/// neighbours, the insert's commit, the answer) and came back: on an AMD EPYC with
/// AVX512_BF16 the passes of 8 texts took 44 ms and the cores encoded 82 % of the time (294
/// saves a second). In four groups of 4, two encode while the other two finish: the cores
/// encoded 97 % of the time (314 and 318 saves a second; three groups a pass, 312). A
/// pass of a few texts on a core of its own costs little more per text than large ones there:
/// two calls side by side, 2 to 16 texts each, ran at 399-425 texts/s against 424-432 for
/// calls of 256.
#[derive(Clone)]
pub struct Embeddings {
    embedder: Arc<dyn Embedder>,
    queries: moka::future::Cache<String, Arc<Vec<f32>>>,
    pending: mpsc::Sender<Pending>,
    /// Saves in progress that may send a document ([`Embeddings::writing`]).
    writers: Arc<AtomicUsize>,
}

/// A save in progress, counted while it lives ([`Embeddings::writing`]).
pub struct Writing(Arc<AtomicUsize>);

impl Drop for Writing {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Embeddings {
    /// Must be called inside a tokio runtime (it starts the batcher).
    pub fn new(embedder: Arc<dyn Embedder>, cached_queries: u64) -> Self {
        Self::with_batcher(embedder, cached_queries, GATHER_WINDOW, PASSES)
    }

    /// [`Embeddings::new`] with another wait for the rest of a batch and another number of
    /// batches encoded at once.
    pub fn with_batcher(
        embedder: Arc<dyn Embedder>,
        cached_queries: u64,
        window: Duration,
        passes: usize,
    ) -> Self {
        let queries = moka::future::Cache::builder()
            .max_capacity(cached_queries)
            .time_to_idle(Duration::from_secs(3_600))
            .build();
        let (pending, queue) = mpsc::channel(1024);
        let writers = Arc::new(AtomicUsize::new(0));
        tokio::spawn(batch_documents(
            embedder.clone(),
            queue,
            writers.clone(),
            window,
            passes,
        ));
        Embeddings {
            embedder,
            queries,
            pending,
            writers,
        }
    }

    /// Counts a save in progress until the guard drops: the batcher expects a document from
    /// each, and a pass waits for its share of them ([`gather_target`]).
    pub fn writing(&self) -> Writing {
        self.writers.fetch_add(1, Ordering::SeqCst);
        Writing(self.writers.clone())
    }

    /// The vector of one document, encoded in a batch with whatever else is waiting.
    pub async fn embed_document(&self, text: String) -> Result<Vec<f32>, EmbedError> {
        let (reply, vector) = oneshot::channel();
        self.pending
            .send(Pending { text, reply })
            .await
            .map_err(|_| EmbedError::Inference("the embedding batcher has stopped".to_string()))?;
        vector
            .await
            .map_err(|_| EmbedError::Inference("the embedding batcher has stopped".to_string()))?
    }

    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    pub fn dimensions(&self) -> usize {
        self.embedder.dimensions()
    }

    /// Vectors of documents (memories), in order.
    pub async fn embed_documents(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embedder.embed(texts).await
    }

    /// The vector of a search query, from the cache when it was asked before.
    pub async fn embed_query(&self, query: &str) -> Result<Arc<Vec<f32>>, EmbedError> {
        if let Some(vector) = self.queries.get(query).await {
            return Ok(vector);
        }
        let mut vectors = self.embedder.embed(vec![query.to_string()]).await?;
        let vector = Arc::new(
            vectors
                .pop()
                .ok_or_else(|| EmbedError::Inference("no vector returned".to_string()))?,
        );
        self.queries.insert(query.to_string(), vector.clone()).await;
        Ok(vector)
    }
}

/// Pass starts over which the batcher remembers how many texts it held at once.
const BUSIEST_OF: usize = 8;

/// How many texts a pass waits for, and takes at most: an even share, among [`GROUPS`]
/// groups for each of `passes`, of the most texts the batcher held at once (queued or in the
/// encoder) or expected (saves in progress, [`Embeddings::writing`]) over its last
/// [`BUSIEST_OF`] pass starts.
fn gather_target(busiest: usize, passes: usize) -> usize {
    busiest
        .div_ceil(passes.max(1) * GROUPS)
        .clamp(1, BATCH_SIZE)
}

/// The batcher: runs until every [`Embeddings`] handle is gone.
async fn batch_documents(
    embedder: Arc<dyn Embedder>,
    mut queue: mpsc::Receiver<Pending>,
    writers: Arc<AtomicUsize>,
    window: Duration,
    passes: usize,
) {
    let passes = passes.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(passes));
    // Texts in the encoder, and a signal each time a pass ends.
    let encoding = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(tokio::sync::Notify::new());
    let mut held = std::collections::VecDeque::with_capacity(BUSIEST_OF);
    let mut batch = Vec::with_capacity(BATCH_SIZE);
    loop {
        let Ok(pass) = slots.clone().acquire_owned().await else {
            return;
        };
        let target = gather_target(held.iter().copied().max().unwrap_or(0), passes);
        if queue.recv_many(&mut batch, target).await == 0 {
            return;
        }
        let received = std::time::Instant::now();
        // Beside a running pass, wait for the target or for that pass to end; with the
        // encoder idle, wait for the target up to `window`.
        let idle = encoding.load(Ordering::SeqCst) == 0;
        let deadline = tokio::time::Instant::now() + window;
        while batch.len() < target {
            let pass_ended = ended.notified();
            tokio::pin!(pass_ended);
            pass_ended.as_mut().enable();
            let busy = encoding.load(Ordering::SeqCst) > 0;
            if !idle && !busy {
                break;
            }
            let room = target - batch.len();
            let more = queue.recv_many(&mut batch, room);
            if busy {
                tokio::select! {
                    n = more => if n == 0 { break },
                    _ = pass_ended => {}
                }
            } else {
                match tokio::time::timeout_at(deadline, more).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
        let texts = batch.len();
        let before = encoding.fetch_add(texts, Ordering::SeqCst);
        if held.len() == BUSIEST_OF {
            held.pop_front();
        }
        held.push_back((before + texts + queue.len()).max(writers.load(Ordering::SeqCst)));
        let jobs = std::mem::take(&mut batch);
        let (embedder, encoding, ended) = (embedder.clone(), encoding.clone(), ended.clone());
        tokio::spawn(async move {
            let texts = jobs.iter().map(|job| job.text.clone()).collect();
            let started = std::time::Instant::now();
            let embedded = embedder.embed(texts).await;
            encoding.fetch_sub(jobs.len(), Ordering::SeqCst);
            drop(pass);
            ended.notify_waiters();
            tracing::debug!(
                texts = jobs.len(),
                gathered_ms = (started - received).as_secs_f64() * 1e3,
                embed_ms = started.elapsed().as_secs_f64() * 1e3,
                "documents embedded"
            );
            reply(jobs, embedded);
        });
    }
}

/// Sends each job its vector, or the batch's error.
fn reply(jobs: Vec<Pending>, embedded: Result<Vec<Vec<f32>>, EmbedError>) {
    match embedded {
        Ok(vectors) if vectors.len() == jobs.len() => {
            for (job, vector) in jobs.into_iter().zip(vectors) {
                let _ = job.reply.send(Ok(vector));
            }
        }
        Ok(vectors) => {
            let error = format!("{} vectors for {} texts", vectors.len(), jobs.len());
            for job in jobs {
                let _ = job.reply.send(Err(EmbedError::Inference(error.clone())));
            }
        }
        Err(error) => {
            for job in jobs {
                let _ = job.reply.send(Err(match &error {
                    EmbedError::Remote(message) => EmbedError::Remote(message.clone()),
                    other => EmbedError::Inference(other.to_string()),
                }));
            }
        }
    }
}

/// Cosine similarity of two unit vectors (their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Little-endian bytes of a vector, as stored.
pub fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector from its stored bytes.
pub fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// An embedder whose every call is measured (batch size and latency) in the server's metrics.
pub struct Measured {
    inner: Arc<dyn Embedder>,
    metrics: Arc<crate::metrics::Metrics>,
}

impl Measured {
    pub fn wrap(
        inner: Arc<dyn Embedder>,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Arc<dyn Embedder> {
        Arc::new(Measured { inner, metrics })
    }
}

#[async_trait]
impl Embedder for Measured {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let count = texts.len();
        let started = std::time::Instant::now();
        let vectors = self.inner.embed(texts).await;
        self.metrics.embedded(count, started.elapsed());
        vectors
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts how many texts it was asked to embed.
    struct Counting(AtomicUsize);

    #[async_trait]
    impl Embedder for Counting {
        fn model(&self) -> &str {
            "counting"
        }
        fn dimensions(&self) -> usize {
            2
        }
        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[tokio::test]
    async fn repeated_queries_come_from_the_cache() {
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let embeddings = Embeddings::new(counting.clone(), 100);
        let first = embeddings.embed_query("where do I live").await.unwrap();
        let second = embeddings.embed_query("where do I live").await.unwrap();
        assert_eq!(first, second);
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        embeddings.embed_query("something else").await.unwrap();
        embeddings
            .embed_documents(vec!["a".into(), "b".into()])
            .await
            .unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn concurrent_documents_are_encoded_in_order_in_batches() {
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let embeddings = Embeddings::new(counting.clone(), 10);
        let texts: Vec<String> = (0..40).map(|i| "x".repeat(i + 1)).collect();
        let vectors =
            futures::future::join_all(texts.iter().map(|t| embeddings.embed_document(t.clone())))
                .await;
        for (text, vector) in texts.iter().zip(vectors) {
            assert_eq!(vector.unwrap(), vec![text.len() as f32, 1.0]);
        }
        assert_eq!(counting.0.load(Ordering::SeqCst), 40);
    }

    /// Records the size of every call, and holds each call until the test lets it go.
    struct Gated {
        sizes: std::sync::Mutex<Vec<usize>>,
        gate: tokio::sync::Semaphore,
    }

    #[async_trait]
    impl Embedder for Gated {
        fn model(&self) -> &str {
            "gated"
        }
        fn dimensions(&self) -> usize {
            1
        }
        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.sizes.lock().unwrap().push(texts.len());
            self.gate.acquire().await.unwrap().forget();
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }
    }

    /// A batcher over a [`Gated`] encoder, and what the tests do with it.
    struct Harness {
        gated: Arc<Gated>,
        embeddings: Embeddings,
    }

    impl Harness {
        /// A window far longer than the gaps in the tests: they do not race the clock.
        fn new(passes: usize) -> Self {
            let gated = Arc::new(Gated {
                sizes: std::sync::Mutex::new(Vec::new()),
                gate: tokio::sync::Semaphore::new(0),
            });
            let embeddings =
                Embeddings::with_batcher(gated.clone(), 10, Duration::from_secs(30), passes);
            Harness { gated, embeddings }
        }

        fn send(&self, text: &str) -> tokio::task::JoinHandle<Result<Vec<f32>, EmbedError>> {
            let embeddings = self.embeddings.clone();
            let text = text.to_string();
            tokio::spawn(async move { embeddings.embed_document(text).await })
        }

        /// The size of every call to the encoder so far.
        fn calls(&self) -> Vec<usize> {
            self.gated.sizes.lock().unwrap().clone()
        }

        /// Until the encoder was called `n` times; fails, rather than hangs, when it is not.
        async fn wait_for(&self, n: usize) {
            let called = async {
                while self.calls().len() < n {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(10), called)
                .await
                .unwrap_or_else(|_| panic!("{n} batches were not encoded: {:?}", self.calls()));
        }

        /// Until `n` texts wait in the batcher's queue.
        async fn queued(&self, n: usize) {
            let pending = &self.embeddings.pending;
            while pending.max_capacity() - pending.capacity() < n {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }

        fn release(&self, calls: usize) {
            self.gated.gate.add_permits(calls);
        }
    }

    #[tokio::test]
    async fn a_pass_takes_its_share_and_the_rest_wait_for_the_next() {
        // One pass at a time, so that each batch waits for the one before it.
        let h = Harness::new(1);
        // A lone text goes at once; of three sent while it is encoded, the next pass takes a
        // share of what the batcher held (one, in two groups: one), the pass after it the
        // other two (three held: a share of two).
        let first = h.send("a");
        h.wait_for(1).await;
        let three: Vec<_> = ["b", "c", "d"].into_iter().map(|t| h.send(t)).collect();
        h.queued(3).await;
        h.release(1);
        first.await.unwrap().unwrap();
        h.wait_for(2).await;
        assert_eq!(h.calls(), vec![1, 1]);
        h.release(1);
        h.wait_for(3).await;
        assert_eq!(h.calls(), vec![1, 1, 2]);
        h.release(1);
        for text in three {
            text.await.unwrap().unwrap();
        }
        // The next four arrive one by one, with time between them: they are still encoded
        // two by two, since the batcher held three.
        let mut next = Vec::new();
        for text in ["e", "f", "g", "h"] {
            next.push(h.send(text));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Permits for however many calls the batcher makes (two when it waited).
        h.release(4);
        for text in next {
            text.await.unwrap().unwrap();
        }
        assert_eq!(h.calls(), vec![1, 1, 2, 2, 2]);
    }

    #[test]
    fn a_pass_waits_for_an_even_share_of_the_groups() {
        // Two groups a pass: with two passes, a quarter of the texts held.
        assert_eq!(gather_target(0, 2), 1);
        assert_eq!(gather_target(1, 2), 1);
        assert_eq!(gather_target(3, 1), 2);
        assert_eq!(gather_target(15, 2), 4);
        assert_eq!(gather_target(16, 2), 4);
        assert_eq!(gather_target(16, 0), 8);
        assert_eq!(gather_target(1000, 2), BATCH_SIZE);
    }

    #[tokio::test]
    async fn beside_a_running_pass_texts_wait_for_their_share_or_its_end() {
        let h = Harness::new(2);
        // Eight saves in progress: a share of two (two passes, two groups each).
        let writing: Vec<_> = (0..8).map(|_| h.embeddings.writing()).collect();
        // The first text goes at once; beside it, the second waits for a third.
        let mut sent = vec![h.send("a")];
        h.wait_for(1).await;
        sent.push(h.send("b"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(h.calls(), vec![1]);
        sent.push(h.send("c"));
        h.wait_for(2).await;
        assert_eq!(h.calls(), vec![1, 2]);
        // Both passes are in: three more wait. When the first pass ends, two of them go.
        sent.extend(["d", "e", "f"].map(|t| h.send(t)));
        h.queued(3).await;
        h.release(1);
        h.wait_for(3).await;
        assert_eq!(h.calls(), vec![1, 2, 2]);
        // The last waits for a slot, then beside the running pass for a second text or that
        // pass's end.
        h.release(1);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(h.calls(), vec![1, 2, 2]);
        h.release(1);
        h.wait_for(4).await;
        assert_eq!(h.calls(), vec![1, 2, 2, 1]);
        h.release(1);
        for text in sent {
            assert_eq!(text.await.unwrap().unwrap(), vec![1.0]);
        }
        drop(writing);
        assert_eq!(h.embeddings.writers.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_second_batch_is_encoded_while_the_first_is_and_a_third_waits() {
        let h = Harness::new(2);
        let first = h.send("a");
        h.wait_for(1).await;
        // The first is held in the encoder: the second is encoded beside it.
        let second = h.send("b");
        h.wait_for(2).await;
        // Two passes are in: the third waits in the queue until one of them ends.
        let third = h.send("c");
        h.queued(1).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(h.calls(), vec![1, 1]);
        h.release(1);
        h.wait_for(3).await;
        assert_eq!(h.calls(), vec![1, 1, 1]);
        h.release(2);
        for text in [first, second, third] {
            assert_eq!(text.await.unwrap().unwrap(), vec![1.0]);
        }
    }

    #[test]
    fn vectors_round_trip_through_bytes() {
        let v = vec![0.25_f32, -1.5, 3.0e-7, 0.0];
        assert_eq!(from_bytes(&to_bytes(&v)), v);
    }

    #[test]
    fn normalize_makes_unit_vectors() {
        let mut v = vec![3.0_f32, 4.0];
        normalize(&mut v);
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
        let mut zero = vec![0.0_f32; 3];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }
}
