//! S3 errors as [`StoreError`]s: what the store branches on (not found, a
//! refused precondition, a conflict) and a message that names the bucket,
//! the key and the cause, with a hint for the usual operator mistakes
//! (missing bucket, access denied, wrong credentials, wrong region,
//! unreachable endpoint, throttling).

use crate::store::StoreError;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

/// What an S3 failure means to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// 404, `NoSuchKey`, `NotFound`.
    NotFound,
    /// 412: a condition (`If-None-Match: *`) refused the write.
    PreconditionFailed,
    /// 409 `ConditionalRequestConflict`: concurrent conditional writes;
    /// retry.
    Conflict,
    Other,
}

/// One failed S3 call.
pub(super) struct Failure {
    pub class: Class,
    status: Option<u16>,
    code: Option<String>,
    region: Option<String>,
    kind: Transport,
    cause: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// The request could not be built or signed (no credentials).
    Construction,
    /// The attempt outlived its timeout.
    Timeout,
    /// No answer: connection refused, DNS, TLS.
    Unreachable,
    /// The endpoint answered.
    Answered,
}

impl Failure {
    pub(super) fn of<E>(err: &SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let status = err.raw_response().map(|r| r.status().as_u16());
        let code = err.code().map(str::to_string);
        let region = err
            .raw_response()
            .and_then(|r| r.headers().get("x-amz-bucket-region"))
            .map(str::to_string);
        let kind = match err {
            SdkError::ConstructionFailure(_) => Transport::Construction,
            SdkError::TimeoutError(_) => Transport::Timeout,
            SdkError::DispatchFailure(d) if d.is_timeout() => Transport::Timeout,
            SdkError::DispatchFailure(_) => Transport::Unreachable,
            _ => Transport::Answered,
        };
        let class = match (status, code.as_deref()) {
            (_, Some("NoSuchKey" | "NotFound")) | (Some(404), None) => Class::NotFound,
            (Some(412), _) | (_, Some("PreconditionFailed")) => Class::PreconditionFailed,
            (_, Some("ConditionalRequestConflict")) => Class::Conflict,
            (Some(404), Some(c)) if c != "NoSuchBucket" => Class::NotFound,
            _ => Class::Other,
        };
        // The endpoint's own words when it gave some; else the SDK's chain
        // of causes (the transport's, the timeout's).
        let cause = match (kind, code.as_deref(), err.message()) {
            (Transport::Answered, Some(code), Some(message)) => format!("{code}: {message}"),
            (Transport::Answered, Some(code), None) => code.to_string(),
            _ => DisplayErrorContext(err).to_string(),
        };
        Self {
            class,
            status,
            code,
            region,
            kind,
            cause,
        }
    }

    /// The endpoint's error code.
    pub(super) fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// The endpoint does not implement the request (501, `NotImplemented`).
    pub(super) fn not_implemented(&self) -> bool {
        self.status == Some(501) || self.code.as_deref() == Some("NotImplemented")
    }

    fn hint(&self) -> Option<String> {
        match self.kind {
            Transport::Construction => {
                return Some("the request could not be signed or built (no credentials? the SDK looks in the environment, the profile files, the web identity token and the instance role)".into());
            }
            Transport::Timeout => {
                return Some("no answer within the timeout (10 s per call, snapshot.s3.transfer_timeout per part), after every attempt".into());
            }
            Transport::Unreachable => {
                return Some("the endpoint is unreachable (check snapshot.s3.endpoint and region, DNS and the network)".into());
            }
            Transport::Answered => {}
        }
        let code = self.code.as_deref().unwrap_or("");
        let hint = match (self.status, code) {
            (_, "NoSuchBucket") => "the bucket does not exist (check snapshot.s3.bucket)".into(),
            (_, "InvalidAccessKeyId") => "the endpoint does not know the access key".into(),
            (_, "SignatureDoesNotMatch") => "the secret key does not match the access key".into(),
            (_, "AccessDenied") | (Some(403), _) => "access denied: the credentials or the bucket policy do not allow it (eco needs s3:ListBucket on the prefix, s3:ListBucketMultipartUploads on the bucket, and s3:GetObject, s3:PutObject, s3:DeleteObject, s3:AbortMultipartUpload on <prefix>/<cluster>/*; and kms:GenerateDataKey, kms:Decrypt with aws:kms; docs/aws.md has the policy)".into(),
            (_, "PermanentRedirect" | "AuthorizationHeaderMalformed" | "IllegalLocationConstraintException" | "IncorrectEndpoint")
            | (Some(301 | 307), _) => format!(
                "wrong region: the bucket is in {} (set snapshot.s3.region)",
                self.region.as_deref().unwrap_or("another region")
            ),
            (_, "SlowDown" | "Throttling" | "ThrottlingException" | "RequestLimitExceeded")
            | (Some(503), _) => "throttled, after every attempt (snapshot.s3.max_attempts)".into(),
            (_, "NotImplemented") | (Some(501), _) => {
                "the endpoint does not implement this request".into()
            }
            (_, "KMS.NotFoundException" | "KMS.DisabledException" | "KMSInvalidStateException") => {
                "the KMS key is missing or disabled (snapshot.s3.kms_key_id)".into()
            }
            _ => return None,
        };
        Some(hint)
    }

    /// The store error of `op` on `key` (or the bucket) of `bucket`.
    pub(super) fn into_error(self, op: &str, bucket: &str, key: Option<&str>) -> StoreError {
        let what = match key {
            Some(key) => format!("s3://{bucket}/{key}"),
            None => format!("s3://{bucket}"),
        };
        let status = self
            .status
            .map(|s| format!(" (HTTP {s})"))
            .unwrap_or_default();
        let message = match self.hint() {
            Some(hint) => format!("{op} {what}: {hint}{status}: {}", self.cause),
            None => format!("{op} {what}{status}: {}", self.cause),
        };
        StoreError::Unavailable(message)
    }
}

/// `Ok(None)` when the failure says the key does not exist, else the store
/// error of `op` on `key`.
pub(super) fn absent_or<T>(
    failure: Failure,
    op: &str,
    bucket: &str,
    key: &str,
) -> Result<Option<T>, StoreError> {
    if failure.class == Class::NotFound {
        Ok(None)
    } else {
        Err(failure.into_error(op, bucket, Some(key)))
    }
}

/// Maps an SDK error in one step (when the store does not branch on it).
pub(super) fn store_error<E>(
    op: &str,
    bucket: &str,
    key: Option<&str>,
) -> impl FnOnce(SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    move |err| Failure::of(&err).into_error(op, bucket, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_s3::error::ErrorMetadata;
    use aws_sdk_s3::operation::head_bucket::HeadBucketError;
    use aws_sdk_s3::primitives::SdkBody;

    fn answered(status: u16, code: Option<&str>, region: Option<&str>) -> String {
        let mut raw = HttpResponse::new(status.try_into().unwrap(), SdkBody::empty());
        if let Some(r) = region {
            raw.headers_mut()
                .insert("x-amz-bucket-region", r.to_string());
        }
        let mut meta = ErrorMetadata::builder();
        if let Some(c) = code {
            meta = meta.code(c);
        }
        let err = SdkError::service_error(HeadBucketError::generic(meta.build()), raw);
        Failure::of(&err)
            .into_error("checking", "bkt", Some("eco/c/k"))
            .to_string()
    }

    #[test]
    fn messages_name_the_bucket_the_key_and_the_likely_cause() {
        let wrong_region = answered(301, None, Some("eu-west-3"));
        assert!(wrong_region.contains("s3://bkt/eco/c/k"), "{wrong_region}");
        assert!(
            wrong_region.contains("wrong region: the bucket is in eu-west-3"),
            "{wrong_region}"
        );
        assert!(answered(403, Some("AccessDenied"), None).contains("access denied"));
        assert!(answered(404, Some("NoSuchBucket"), None).contains("the bucket does not exist"));
        assert!(
            answered(403, Some("InvalidAccessKeyId"), None)
                .contains("does not know the access key")
        );
        assert!(answered(400, Some("AuthorizationHeaderMalformed"), None).contains("wrong region"));
        assert!(answered(503, Some("SlowDown"), None).contains("throttled"));
    }

    #[test]
    fn classes() {
        let class = |status: u16, code: Option<&str>| {
            let raw = HttpResponse::new(status.try_into().unwrap(), SdkBody::empty());
            let mut meta = ErrorMetadata::builder();
            if let Some(c) = code {
                meta = meta.code(c);
            }
            Failure::of(&SdkError::service_error(
                HeadBucketError::generic(meta.build()),
                raw,
            ))
            .class
        };
        assert_eq!(class(404, None), Class::NotFound);
        assert_eq!(class(404, Some("NoSuchKey")), Class::NotFound);
        assert_eq!(class(404, Some("NoSuchBucket")), Class::Other);
        assert_eq!(
            class(412, Some("PreconditionFailed")),
            Class::PreconditionFailed
        );
        assert_eq!(
            class(409, Some("ConditionalRequestConflict")),
            Class::Conflict
        );
        assert_eq!(class(409, Some("BucketAlreadyExists")), Class::Other);
        assert_eq!(class(500, Some("InternalError")), Class::Other);
    }
}
