//! Request rate limits: GCRA quotas (governor) per caller, with per-caller overrides, optional
//! per-skill quotas for sends, and a ceiling for the whole gateway. A request over any quota is
//! refused with [`A2aError::RateLimited`] carrying the time after which the same request would
//! conform (the gateway answers 429 with `Retry-After`).
//!
//! The layer owns the quota state ([`RateLimits`]); it reads the [`Caller`] (always present after
//! authentication; anonymous callers are keyed by address) and, for sends, the skill from
//! [`RouteHint`]. The gateway checks the caller's quota and the global ceiling right after
//! authentication ([`RateLimitLayer::per_caller`]: not-found probes and permission denials use up
//! quota too) and the per-skill quotas after routing ([`RateLimitLayer::per_skill`]). Checks run narrowest first — the caller's quota, then the skill's, then the global
//! ceiling — so that a caller refused by its own quota does not use up the gateway-wide budget.
//! A refused request still counts against the quotas checked before the one that refused it.
//!
//! Memory is bounded: each keyed quota tracks at most `max_tracked_keys` callers, evicts callers
//! whose bucket has refilled (they are indistinguishable from new ones) every so many new keys, and
//! past the bound lets new callers share one overflow bucket. No background task is needed; the
//! owner may also call [`RateLimits::sweep`] on a timer.
//!
//! Construction is cheap and in-process (`RateLimitLayer::new(Arc::new(RateLimits::new(&config)?))`);
//! a check is a few atomic operations and hash lookups, with no allocation for known callers.

mod config;
mod store;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::{Either, Ready, ready};
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, Quota, RateLimiter};
use http::Request;
use tower::{Layer, Service};

pub use self::config::{ConfigError, QuotaConfig, RateLimitConfig};
pub(crate) use self::store::TokioClock;
use self::store::{BoundedStore, Occupancy};
use crate::{A2aCall, A2aError, Caller, RouteHint};

pub(crate) type Instant = std::time::Instant;
pub(crate) type Direct = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Instant>>;

/// One quota applied per key (a caller, an address), with bounded memory.
pub(crate) struct Keyed<K: Hash + Eq + Clone = Arc<str>> {
    limiter: RateLimiter<K, BoundedStore<K>, TokioClock, NoOpMiddleware<Instant>>,
    occupancy: Arc<Occupancy>,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    pub(crate) fn new(quota: Quota, max_keys: usize) -> Keyed<K> {
        let store = BoundedStore::new(max_keys);
        let occupancy = store.occupancy();
        Keyed { limiter: RateLimiter::new(quota, store, TokioClock), occupancy }
    }

    pub(crate) fn check(&self, key: &K) -> Result<(), NotUntil<Instant>> {
        // Sweeping first lets a new caller that finds the store full take the place of an idle one.
        let now = TokioClock.now();
        if self.occupancy.claim_sweep(now) {
            self.sweep_now();
            self.occupancy.swept(now);
        }
        self.limiter.check_key(key)
    }

    pub(crate) fn sweep_now(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Which quota refused a request; named in the refusal so the caller knows what to slow down.
#[derive(Clone, Copy)]
enum Scope<'a> {
    Caller,
    Skill(&'a str),
    Global,
}

/// The quota state of the gateway: build it once from [`RateLimitConfig`] and share it.
pub struct RateLimits {
    default: Keyed,
    callers: HashMap<Box<str>, Direct>,
    skills: HashMap<Box<str>, Keyed>,
    global: Option<Direct>,
}

impl RateLimits {
    /// Builds the quotas; a bad quota is reported with its key path inside the section.
    pub fn new(config: &RateLimitConfig) -> Result<RateLimits, ConfigError> {
        let max_keys = config.max_tracked_keys.max(1);
        let default = Keyed::new(config.default.quota("default")?, max_keys);
        let mut callers = HashMap::with_capacity(config.callers.len());
        for (id, quota) in &config.callers {
            let quota = quota.quota(&format!("callers.{id}"))?;
            callers.insert(Box::from(id.as_str()), RateLimiter::direct_with_clock(quota, TokioClock));
        }
        let mut skills = HashMap::with_capacity(config.skills.len());
        for (skill, quota) in &config.skills {
            skills.insert(Box::from(skill.as_str()), Keyed::new(quota.quota(&format!("skills.{skill}"))?, max_keys));
        }
        let global = match &config.global {
            Some(quota) => Some(RateLimiter::direct_with_clock(quota.quota("global")?, TokioClock)),
            None => None,
        };
        Ok(RateLimits { default, callers, skills, global })
    }

    /// Admits one request of `caller` (a send to `skill`, when given) or says which quota it is over.
    pub fn check(&self, caller: &Arc<str>, skill: Option<&str>) -> Result<(), A2aError> {
        self.check_caller(caller)?;
        match skill {
            Some(skill) => self.check_skill(caller, skill),
            None => Ok(()),
        }
    }

    /// The caller's own quota, then the gateway's ceiling: for every request, before it is routed or
    /// authorized, so that probes and refused requests are metered too.
    pub fn check_caller(&self, caller: &Arc<str>) -> Result<(), A2aError> {
        match self.callers.get(&**caller) {
            Some(own) => own.check().map_err(|until| refusal(&until, Scope::Caller))?,
            None => self.default.check(caller).map_err(|until| refusal(&until, Scope::Caller))?,
        }
        if let Some(global) = &self.global {
            global.check().map_err(|until| refusal(&until, Scope::Global))?;
        }
        Ok(())
    }

    /// The caller's quota for sending to `skill`, once routing has decided the skill.
    pub fn check_skill(&self, caller: &Arc<str>, skill: &str) -> Result<(), A2aError> {
        if let Some((skill, quota)) = self.skills.get_key_value(skill) {
            quota.check(caller).map_err(|until| refusal(&until, Scope::Skill(skill)))?;
        }
        Ok(())
    }

    /// Whether any per-skill quota is configured (else the per-skill stage has nothing to do).
    pub fn has_skill_quotas(&self) -> bool {
        !self.skills.is_empty()
    }

    /// Evicts every caller whose buckets have refilled. Runs on its own every so many new callers;
    /// an owner may also call it on a timer.
    pub fn sweep(&self) {
        self.default.sweep_now();
        self.skills.values().for_each(Keyed::sweep_now);
    }

    /// How many caller buckets are tracked across the keyed quotas (for metrics and tests).
    pub fn tracked_keys(&self) -> usize {
        self.default.occupancy.keys() + self.skills.values().map(|quota| quota.occupancy.keys()).sum::<usize>()
    }
}

fn refusal(until: &NotUntil<Instant>, scope: Scope<'_>) -> A2aError {
    let retry_after = until.wait_time_from(TokioClock.now());
    let what = match scope {
        Scope::Caller => "you are over your request rate limit".to_owned(),
        Scope::Skill(skill) => format!("you are over your rate limit for the skill '{skill}'"),
        Scope::Global => "the gateway is over its overall request rate limit".to_owned(),
    };
    A2aError::RateLimited { message: format!("{what}; retry after {}", human(retry_after)), retry_after }
}

/// Whole seconds, rounded up, the way `Retry-After` will say it; milliseconds when under a second.
pub(crate) fn human(wait: Duration) -> String {
    if wait < Duration::from_secs(1) {
        return format!("{} ms", wait.as_millis().max(1));
    }
    format!("{} s", wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
}

/// Which quotas a [`RateLimitLayer`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The caller's quota and the global ceiling (right after authentication).
    Caller,
    /// The per-skill quotas of sends (after routing decided the skill).
    Skill,
    /// Both, in one place.
    Both,
}

/// Applies [`RateLimits`] to every request. The gateway uses two: [`RateLimitLayer::per_caller`]
/// right after authentication, so that every answered request — a not-found probe, a permission
/// denial — is metered, and [`RateLimitLayer::per_skill`] once the route names the skill.
#[derive(Clone)]
pub struct RateLimitLayer {
    limits: Arc<RateLimits>,
    stage: Stage,
}

impl RateLimitLayer {
    /// Every quota at once (needs the route: place it after routing).
    pub fn new(limits: Arc<RateLimits>) -> RateLimitLayer {
        RateLimitLayer { limits, stage: Stage::Both }
    }

    /// The caller's quota and the global ceiling; needs only the [`Caller`].
    pub fn per_caller(limits: Arc<RateLimits>) -> RateLimitLayer {
        RateLimitLayer { limits, stage: Stage::Caller }
    }

    /// The per-skill quotas of sends; needs the [`RouteHint`].
    pub fn per_skill(limits: Arc<RateLimits>) -> RateLimitLayer {
        RateLimitLayer { limits, stage: Stage::Skill }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> RateLimitService<S> {
        RateLimitService { inner, limits: self.limits.clone(), stage: self.stage }
    }
}

#[derive(Clone)]
pub struct RateLimitService<S> {
    inner: S,
    limits: Arc<RateLimits>,
    stage: Stage,
}

impl<S> Service<Request<Bytes>> for RateLimitService<S>
where
    S: Service<Request<Bytes>, Error = A2aError>,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = Either<Ready<Result<S::Response, A2aError>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let Some(caller) = request.extensions().get::<Caller>() else {
            // Authentication always runs first and sets a caller: without one the stack is miswired.
            tracing::error!("rate limit: request without a Caller extension");
            return Either::Left(ready(Err(A2aError::Internal)));
        };
        let is_send = request.extensions().get::<A2aCall>().is_some_and(|call| call.operation.is_send());
        let skill = match request.extensions().get::<RouteHint>() {
            Some(route) if is_send => route.skill.as_deref(),
            _ => None,
        };
        let checked = match (self.stage, skill) {
            (Stage::Caller, _) => self.limits.check_caller(&caller.id),
            (Stage::Skill, Some(skill)) => self.limits.check_skill(&caller.id, skill),
            (Stage::Skill, None) => Ok(()),
            (Stage::Both, skill) => self.limits.check(&caller.id, skill),
        };
        match checked {
            Ok(()) => Either::Right(self.inner.call(request)),
            Err(refusal) => Either::Left(ready(Err(refusal))),
        }
    }
}

#[cfg(test)]
mod tests;
