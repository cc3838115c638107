//! `slow`: works for a configurable time (10 s by default), reporting progress once a second
//! (which also keeps SDK clients' 5 s read timeout from firing), then completes. A cancel
//! aborts it between two updates.

use std::time::Duration;

use a2a_model::{Part, TaskState};
use tokio::time::{Instant, sleep_until};

use crate::store::TaskClosed;
use crate::turn::Updater;

const TICK: Duration = Duration::from_secs(1);

pub async fn run(updater: &mut Updater, duration: Duration) -> Result<(), TaskClosed> {
    let started = Instant::now();
    let end = started + duration;
    let steps = steps_for(duration);
    for step in 1..=steps {
        updater.status(TaskState::Working, Some(&format!("working {step}/{steps}")))?;
        sleep_until((started + TICK * step).min(end)).await;
    }
    let summary = format!("worked for {:.1} s", duration.as_secs_f64());
    updater.artifact("result", vec![Part::text(summary)])?;
    updater.status(TaskState::Completed, Some("done"))
}

/// One progress update per started second, and at least one.
fn steps_for(duration: Duration) -> u32 {
    let whole = duration.as_secs();
    let partial = u64::from(duration.subsec_nanos() > 0);
    u32::try_from(whole + partial).unwrap_or(u32::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_per_started_second() {
        assert_eq!(steps_for(Duration::from_secs(10)), 10);
        assert_eq!(steps_for(Duration::from_millis(300)), 1);
        assert_eq!(steps_for(Duration::from_millis(2500)), 3);
        assert_eq!(steps_for(Duration::ZERO), 1);
    }
}
