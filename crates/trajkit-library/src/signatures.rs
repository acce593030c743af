//! The content signatures of a run, made in one walk over its text: the near-duplicate
//! sketch (`near`, words as written) and the contamination fingerprints (`contamination`,
//! words lowercased). Both read the run's own steps in order; an ASCII text is split once
//! for the two, and a word without capitals is hashed once.

use trajkit_model::{Role, Trajectory};

use crate::minhash::{word_hashes, word_hashes_both, ContentSketch, Signature};

/// A run's content signatures.
#[derive(Debug, Default, PartialEq)]
pub struct Signatures {
    /// `near::content_sketch`.
    pub sketch: Option<Signature>,
    /// `contamination::fingerprints`.
    pub fingerprints: Option<Vec<u64>>,
}

/// The signatures of `t` asked for (`sketch`, `fingerprints`); the others are `None`.
pub fn of(t: &Trajectory, sketch: bool, fingerprints: bool) -> Signatures {
    let mut walk = Walk {
        sketch: sketch.then(ContentSketch::default),
        grams: fingerprints.then(Vec::new),
        scratch: Vec::new(),
        words: Vec::new(),
        kept: Vec::new(),
    };
    if let Some(i) = &t.task.instruction {
        walk.text(i, false, true);
    }
    for step in t.steps.iter().filter(|s| !s.copied_context) {
        // System prompts (an environment's policy, shared by its tasks) are not fingerprinted.
        let fingerprinted = step.role != Role::System;
        if let Some(c) = &step.content {
            c.for_each_string(&mut |x| walk.text(x, true, fingerprinted));
        }
        for call in &step.tool_calls {
            walk.text(&call.name, true, false);
            call.arguments.for_each_string(&mut |x| walk.text(x, true, fingerprinted));
        }
        for r in &step.tool_results {
            if let Some(c) = &r.content {
                c.for_each_string(&mut |x| walk.text(x, true, fingerprinted));
            }
        }
    }
    Signatures {
        sketch: walk.sketch.and_then(ContentSketch::finish),
        fingerprints: walk.grams.and_then(|g| crate::contamination::fingerprints_of(&g)),
    }
}

/// The signatures being made, and the buffers each text is split in.
struct Walk {
    sketch: Option<ContentSketch>,
    /// The n-grams of every fingerprinted text so far.
    grams: Option<Vec<u64>>,
    /// A lowercased word.
    scratch: Vec<u8>,
    /// The lowercased word hashes of the text.
    words: Vec<u64>,
    /// The word hashes of the text as written.
    kept: Vec<u64>,
}

impl Walk {
    /// Adds one text's words to the sketch (when `sketched`) and its n-grams (which never
    /// span two texts) to the fingerprints (when `fingerprinted`).
    fn text(&mut self, text: &str, sketched: bool, fingerprinted: bool) {
        let sketch = self.sketch.as_mut().filter(|_| sketched);
        self.kept.clear();
        let kept = &mut self.kept;
        let Some(grams) = self.grams.as_mut().filter(|_| fingerprinted) else {
            if let Some(s) = sketch {
                word_hashes(text, false, &mut self.scratch, |h| kept.push(h));
                s.add_words(kept);
            }
            return;
        };
        self.words.clear();
        let words = &mut self.words;
        match sketch {
            Some(s) => {
                word_hashes_both(text, &mut self.scratch, |h| kept.push(h), |h| words.push(h));
                s.add_words(kept);
            }
            None => word_hashes(text, true, &mut self.scratch, |h| words.push(h)),
        }
        crate::contamination::ngrams_of(words, grams);
    }
}
