//! One rendering's running budget: its deadline, the output it may still
//! produce and the images it may still embed, and the notices it gathers.

use std::time::Instant;

use crate::notice::{Notice, NoticeKind, Notices};
use crate::{ViewError, ViewLimits};

#[derive(Debug)]
pub(crate) struct Ctx<'l> {
    pub limits: &'l ViewLimits,
    started: Instant,
    output_left: usize,
    images_left: u64,
    pub notices: Notices,
}

impl<'l> Ctx<'l> {
    pub fn new(limits: &'l ViewLimits) -> Ctx<'l> {
        Ctx {
            limits,
            started: Instant::now(),
            output_left: limits.max_output_bytes,
            images_left: limits.max_image_bytes,
            notices: Notices::default(),
        }
    }

    /// Fails once the deadline has passed; renderers call it in every loop.
    pub fn check_time(&self) -> Result<(), ViewError> {
        if self.started.elapsed() > self.limits.deadline {
            return Err(ViewError::DeadlineExceeded {
                limit: self.limits.deadline,
            });
        }
        Ok(())
    }

    /// The output budget a new part may use.
    pub fn output_left(&self) -> usize {
        self.output_left
    }

    /// Takes a finished part's size off the budget; records the notice when
    /// the part was cut short.
    pub fn spend_output(&mut self, bytes: usize, truncated: bool) {
        self.output_left = self.output_left.saturating_sub(bytes);
        if truncated {
            self.notices.add(
                NoticeKind::OutputTruncated,
                format!(
                    "the document is longer than the viewer shows ({} bytes of HTML); the rest is left out",
                    self.limits.max_output_bytes
                ),
            );
        }
    }

    pub fn output_spent(&self) -> bool {
        self.output_left == 0 || self.notices.has(NoticeKind::OutputTruncated)
    }

    /// Takes an image of `bytes` off the image budget, or says why not.
    pub fn take_image(&mut self, bytes: u64) -> bool {
        if bytes > self.limits.max_one_image_bytes || bytes > self.images_left {
            self.notices.add(
                NoticeKind::ImageOmitted,
                "some images are too large to show and are left out",
            );
            return false;
        }
        self.images_left -= bytes;
        true
    }

    pub fn into_notices(self) -> Vec<Notice> {
        self.notices.into_vec()
    }
}
