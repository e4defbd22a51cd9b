//! The errors of one phase of a benchmark: all counted, the first few kept to show.

/// Error messages kept per phase, to show what went wrong.
pub const ERROR_SAMPLES: usize = 5;

/// Counts errors and keeps the first few messages.
#[derive(Default)]
pub struct Errors {
    pub count: usize,
    /// The first [`ERROR_SAMPLES`] messages.
    pub samples: Vec<String>,
}

impl Errors {
    pub fn push(&mut self, message: String) {
        self.count += 1;
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(message);
        }
    }

    /// Prints the messages kept, and how many more there were, on stderr.
    pub fn show(&self, phase: &str) {
        for sample in &self.samples {
            eprintln!("[{phase}] {sample}");
        }
        if self.count > self.samples.len() {
            eprintln!(
                "[{phase}] ... {} more errors",
                self.count - self.samples.len()
            );
        }
    }
}
