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
mod shared;
mod store;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, Quota, RateLimiter};

pub use self::config::{ConfigError, QuotaConfig, RateLimitConfig};
pub use self::shared::{SharedCheck, SharedQuotas, Verdict};
pub(crate) use self::store::TokioClock;
use self::store::{BoundedStore, Occupancy};
use crate::check::{self, CheckLayer, CheckService};
use a2a_core::{A2aError, CallRequest};

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
    /// The quotas themselves, for a shared store.
    plan: Plan,
    /// When set, quotas are counted there (across replicas) and the buckets above only serve
    /// while it is unreachable, if the store says so.
    shared: Option<Arc<dyn SharedQuotas>>,
}

#[derive(Default)]
struct Plan {
    default: Option<Quota>,
    callers: HashMap<Box<str>, Quota>,
    skills: HashMap<Box<str>, Quota>,
    global: Option<Quota>,
}

/// The outcome of a check: decided now (in-process buckets), or by a shared store.
pub enum Check {
    Now(Result<(), A2aError>),
    Shared(BoxFuture<'static, Result<(), A2aError>>),
}

impl RateLimits {
    /// Builds the quotas; a bad quota is reported with its key path inside the section.
    pub fn new(config: &RateLimitConfig) -> Result<RateLimits, ConfigError> {
        let max_keys = config.max_tracked_keys.max(1);
        let mut plan = Plan { default: Some(config.default.quota("default")?), ..Plan::default() };
        let default = Keyed::new(config.default.quota("default")?, max_keys);
        let mut callers = HashMap::with_capacity(config.callers.len());
        for (id, quota) in &config.callers {
            let quota = quota.quota(&format!("callers.{id}"))?;
            plan.callers.insert(Box::from(id.as_str()), quota);
            callers.insert(Box::from(id.as_str()), RateLimiter::direct_with_clock(quota, TokioClock));
        }
        let mut skills = HashMap::with_capacity(config.skills.len());
        for (skill, quota) in &config.skills {
            let quota = quota.quota(&format!("skills.{skill}"))?;
            plan.skills.insert(Box::from(skill.as_str()), quota);
            skills.insert(Box::from(skill.as_str()), Keyed::new(quota, max_keys));
        }
        let global = match &config.global {
            Some(quota) => {
                let quota = quota.quota("global")?;
                plan.global = Some(quota);
                Some(RateLimiter::direct_with_clock(quota, TokioClock))
            }
            None => None,
        };
        Ok(RateLimits { default, callers, skills, global, plan, shared: None })
    }

    /// Counts the quotas in `store`, shared with other replicas, instead of in this process.
    pub fn with_shared(mut self, store: Arc<dyn SharedQuotas>) -> RateLimits {
        self.shared = Some(store);
        self
    }

    /// [`RateLimits::check_caller`], or its shared form when a store is attached.
    pub fn check_caller_any(self: &Arc<Self>, caller: &Arc<str>) -> Check {
        let Some(store) = &self.shared else { return Check::Now(self.check_caller(caller)) };
        let quota = self.plan.callers.get(&**caller).copied().or(self.plan.default);
        let mut checks = Vec::with_capacity(2);
        let mut scopes = Vec::with_capacity(2);
        if let Some(quota) = quota {
            checks.push(shared_check(format!("c\n{caller}"), quota));
            scopes.push(Owned::Caller);
        }
        if let Some(quota) = self.plan.global {
            checks.push(shared_check("g".to_owned(), quota));
            scopes.push(Owned::Global);
        }
        let (this, caller) = (self.clone(), caller.clone());
        let verdict = store.check(checks);
        Check::Shared(Box::pin(async move {
            match verdict.await? {
                Verdict::Admitted => Ok(()),
                Verdict::Refused { index, retry_after } => Err(refused(retry_after, scopes[index].scope())),
                Verdict::Local => this.check_caller(&caller),
            }
        }))
    }

    /// [`RateLimits::check_skill`], or its shared form when a store is attached.
    pub fn check_skill_any(self: &Arc<Self>, caller: &Arc<str>, skill: &str) -> Check {
        let Some(store) = &self.shared else { return Check::Now(self.check_skill(caller, skill)) };
        let Some(quota) = self.plan.skills.get(skill).copied() else { return Check::Now(Ok(())) };
        let verdict = store.check(vec![shared_check(format!("s\n{skill}\n{caller}"), quota)]);
        let (this, caller, skill) = (self.clone(), caller.clone(), skill.to_owned());
        Check::Shared(Box::pin(async move {
            match verdict.await? {
                Verdict::Admitted => Ok(()),
                Verdict::Refused { retry_after, .. } => Err(refused(retry_after, Scope::Skill(&skill))),
                Verdict::Local => this.check_skill(&caller, &skill),
            }
        }))
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

/// A scope that a future can carry (the skill's name is known where it is used).
#[derive(Clone, Copy)]
enum Owned {
    Caller,
    Global,
}

impl Owned {
    fn scope(self) -> Scope<'static> {
        match self {
            Owned::Caller => Scope::Caller,
            Owned::Global => Scope::Global,
        }
    }
}

fn shared_check(key: String, quota: Quota) -> SharedCheck {
    SharedCheck { key, interval: quota.replenish_interval(), burst: quota.burst_size().get() }
}

fn refusal(until: &NotUntil<Instant>, scope: Scope<'_>) -> A2aError {
    refused(until.wait_time_from(TokioClock.now()), scope)
}

fn refused(retry_after: Duration, scope: Scope<'_>) -> A2aError {
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

impl Check {
    async fn resolve(self) -> Result<(), A2aError> {
        match self {
            Check::Now(result) => result,
            Check::Shared(future) => future.await,
        }
    }
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

/// Applies [`RateLimits`] to every request (the check of [`RateLimitLayer`]).
#[derive(Clone)]
pub struct RateLimit {
    limits: Arc<RateLimits>,
    stage: Stage,
}

/// Applies [`RateLimits`] to every request. The gateway uses two: [`RateLimitLayer::per_caller`]
/// right after authentication, so that every answered request — a not-found probe, a permission
/// denial — is metered, and [`RateLimitLayer::per_skill`] once the route names the skill.
pub type RateLimitLayer = CheckLayer<RateLimit>;
/// The service of [`RateLimitLayer`].
pub type RateLimitService<S> = CheckService<RateLimit, S>;

impl RateLimitLayer {
    /// Every quota at once (needs the route: place it after routing).
    pub fn new(limits: Arc<RateLimits>) -> RateLimitLayer {
        CheckLayer::of(RateLimit { limits, stage: Stage::Both })
    }

    /// The caller's quota and the global ceiling; needs only the [`Caller`].
    pub fn per_caller(limits: Arc<RateLimits>) -> RateLimitLayer {
        CheckLayer::of(RateLimit { limits, stage: Stage::Caller })
    }

    /// The per-skill quotas of sends; needs the [`RouteHint`].
    pub fn per_skill(limits: Arc<RateLimits>) -> RateLimitLayer {
        CheckLayer::of(RateLimit { limits, stage: Stage::Skill })
    }
}

impl check::Check for RateLimit {
    fn check(&self, request: CallRequest) -> check::Verdict {
        let context = request.body();
        let caller = &context.caller;
        let skill = match context.route() {
            Some(route) if context.call.operation.is_send() => route.skill.as_deref(),
            _ => None,
        };
        let checked = match (self.stage, skill) {
            (Stage::Caller, _) => self.limits.check_caller_any(&caller.id),
            (Stage::Skill, Some(skill)) => self.limits.check_skill_any(&caller.id, skill),
            (Stage::Skill, None) => Check::Now(Ok(())),
            (Stage::Both, skill) if self.limits.shared.is_none() => Check::Now(self.limits.check(&caller.id, skill)),
            (Stage::Both, skill) => {
                let (caller_check, skill_check) = (
                    self.limits.check_caller_any(&caller.id),
                    skill.map(|skill| self.limits.check_skill_any(&caller.id, skill)),
                );
                Check::Shared(Box::pin(async move {
                    caller_check.resolve().await?;
                    match skill_check {
                        Some(check) => check.resolve().await,
                        None => Ok(()),
                    }
                }))
            }
        };
        match checked {
            Check::Now(result) => result.map(|()| request).into(),
            Check::Shared(decision) => check::Verdict::Later(Box::pin(async move {
                decision.await?;
                Ok(request)
            })),
        }
    }
}

#[cfg(test)]
mod tests;
