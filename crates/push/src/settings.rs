//! What a service that sends Web Push reads from the environment: nutrition-api (its test
//! pushes) and push-scheduler (the reminders) read it alike.

use service_kit::{ConfigError, Env};

use crate::{EndpointPolicy, VapidConfig};

#[derive(Debug, Clone)]
pub struct PushSettings {
    /// `None`: push is switched off.
    pub vapid: Option<VapidConfig>,
    /// Accept `http://` and private-network push endpoints (tests against a local push service).
    pub allow_http_endpoints: bool,
    /// The push endpoints that may be registered and sent to (`PUSH_ENDPOINT_HOSTS`, default the
    /// known Web Push services; any host with `PUSH_ALLOW_HTTP_ENDPOINTS`).
    pub endpoints: EndpointPolicy,
}

impl PushSettings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            vapid: VapidConfig::from_env(env)?,
            allow_http_endpoints: crate::vapid::allow_http_endpoints(env)?,
            endpoints: EndpointPolicy::from_env(env)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VapidKeyPair;

    fn with(pairs: &[(&str, &str)]) -> Result<PushSettings, ConfigError> {
        PushSettings::from_env(&Env::overriding(&[], pairs))
    }

    fn failing(pairs: &[(&str, &str)]) -> String {
        with(pairs).expect_err("must be rejected").var
    }

    #[test]
    fn defaults_have_push_off_and_the_known_push_services() {
        let s = with(&[]).expect("valid");
        assert!(s.vapid.is_none());
        assert!(!s.allow_http_endpoints);
        assert_eq!(s.endpoints, EndpointPolicy::known_push_services());
    }

    #[test]
    fn endpoint_hosts_are_host_suffixes_or_a_star() {
        assert_eq!(
            failing(&[("PUSH_ENDPOINT_HOSTS", "com")]),
            "PUSH_ENDPOINT_HOSTS"
        );
        assert_eq!(
            failing(&[("PUSH_ENDPOINT_HOSTS", "*,fcm.googleapis.com")]),
            "PUSH_ENDPOINT_HOSTS"
        );
        let any = with(&[("PUSH_ENDPOINT_HOSTS", "*")]).expect("valid");
        assert_eq!(any.endpoints, EndpointPolicy::any_public_host());
    }

    #[test]
    fn vapid_all_or_none_well_formed_and_paired() {
        let pair = VapidKeyPair::generate();
        let other = VapidKeyPair::generate();
        let subject = ("VAPID_SUBJECT", "mailto:a@example.com");
        assert_eq!(
            failing(&[("VAPID_PUBLIC_KEY", &pair.public_key)]),
            "VAPID_PRIVATE_KEY"
        );
        let bad_private = [
            ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
            ("VAPID_PRIVATE_KEY", "zz"),
            subject,
        ];
        assert_eq!(failing(&bad_private), "VAPID_PRIVATE_KEY");
        let unpaired = [
            ("VAPID_PUBLIC_KEY", other.public_key.as_str()),
            ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
            subject,
        ];
        assert_eq!(failing(&unpaired), "VAPID_PUBLIC_KEY");
        let no_mailto = [
            ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
            ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
            ("VAPID_SUBJECT", "a@example.com"),
        ];
        assert_eq!(failing(&no_mailto), "VAPID_SUBJECT");
        let good = [
            ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
            ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
            subject,
        ];
        assert!(with(&good).expect("valid").vapid.is_some());
    }

    #[test]
    fn allow_http_is_a_flag() {
        assert_eq!(
            failing(&[("PUSH_ALLOW_HTTP_ENDPOINTS", "sometimes")]),
            "PUSH_ALLOW_HTTP_ENDPOINTS"
        );
        let on = with(&[("PUSH_ALLOW_HTTP_ENDPOINTS", "true")]).expect("valid");
        assert!(on.allow_http_endpoints);
    }
}
