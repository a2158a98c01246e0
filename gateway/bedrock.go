package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tollgate-ai/tollgate/extproc"
)

// awsCredential is a bedrock provider's sealed credential: static keys
// (with an optional session token), or a shared-config profile; empty (or
// "{}") means the SDK's default chain — environment, shared config and
// credentials files, web identity, ECS and EC2 instance roles.
type awsCredential struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token,omitempty"`
	Profile         string `json:"profile,omitempty"`
}

// errBedrockRegion: a bedrock provider names no region.
var errBedrockRegion = errors.New("bedrock provider: no region (give --region, or a base URL https://bedrock-runtime.<region>.amazonaws.com)")

// bedrockRegion is the provider's region: its api_version field (set by
// --region), else the one of a bedrock-runtime.<region>.amazonaws.com host.
func bedrockRegion(apiVersion, host string) (string, error) {
	if apiVersion != "" {
		return apiVersion, nil
	}
	if rest, ok := strings.CutPrefix(host, "bedrock-runtime."); ok {
		if region, _, ok := strings.Cut(rest, "."); ok && region != "" {
			return region, nil
		}
	}
	return "", errBedrockRegion
}

// newBedrockSigner makes the SigV4 signer of a bedrock provider. host is the
// Host the data plane sends upstream (the route's host rewrite), which the
// signature covers.
func newBedrockSigner(ctx context.Context, credential, apiVersion, host string) (*awsSigner, error) {
	region, err := bedrockRegion(apiVersion, host)
	if err != nil {
		return nil, err
	}
	var c awsCredential
	if s := strings.TrimSpace(credential); s != "" {
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			// Never echo the credential: only say what is wrong with it.
			return nil, errors.New("bedrock provider: the credential must be JSON {\"access_key_id\",\"secret_access_key\"[,\"session_token\"]} or {\"profile\"}")
		}
	}
	var provider aws.CredentialsProvider
	switch {
	case c.AccessKeyID != "" || c.SecretAccessKey != "":
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, errors.New("bedrock provider: the credential needs both access_key_id and secret_access_key")
		}
		provider = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	default:
		opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
		if c.Profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(c.Profile))
		}
		cfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("bedrock provider: default AWS credentials: %w", err)
		}
		provider = cfg.Credentials
	}
	return &awsSigner{
		creds: aws.NewCredentialsCache(provider), region: region, service: "bedrock", host: host,
		signer: v4.NewSigner(), now: time.Now,
	}, nil
}

// awsSigner signs requests with SigV4 (aws-sdk-go-v2's signer) once their
// body is final: the processor calls it after its body mutation, so the
// payload hash is the one of the bytes Envoy sends. Credentials are cached
// and refreshed by aws.CredentialsCache; they are never logged.
type awsSigner struct {
	creds   aws.CredentialsProvider
	region  string
	service string
	host    string
	signer  *v4.Signer
	now     func() time.Time
}

var _ extproc.RequestSigner = (*awsSigner)(nil)

// SignRequest returns the authorization, x-amz-date and (temporary
// credentials) x-amz-security-token headers. The signed headers are host and
// x-amz-date (and the token): content-length and content-type are left out,
// so the data plane's framing of the body cannot break the signature.
func (a *awsSigner) SignRequest(ctx context.Context, r *extproc.UpstreamRequest) ([][2]string, error) {
	creds, err := a.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws credentials: %w", err)
	}
	escaped, query, _ := strings.Cut(r.Path, "?")
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, fmt.Errorf("sigv4: path %q: %w", escaped, err)
	}
	req := &http.Request{
		Method: r.Method, Host: a.host, Header: http.Header{},
		URL: &url.URL{Scheme: "https", Host: a.host, Path: path, RawPath: escaped, RawQuery: query},
	}
	sum := sha256.Sum256(r.Body)
	if err := a.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), a.service, a.region, a.now()); err != nil {
		return nil, fmt.Errorf("sigv4: %w", err)
	}
	h := [][2]string{{"authorization", req.Header.Get("Authorization")}, {"x-amz-date", req.Header.Get("X-Amz-Date")}}
	if tok := req.Header.Get("X-Amz-Security-Token"); tok != "" {
		h = append(h, [2]string{"x-amz-security-token", tok})
	}
	return h, nil
}

// upstreamHostHeader is the Host the data plane sends to an upstream (xDS's
// host_rewrite_literal): the host, with the port when it is not the
// scheme's default. A signature must cover exactly this value.
func upstreamHostHeader(scheme, host string, port uint32) string {
	if scheme == "https" && port == 443 || scheme == "http" && port == 80 {
		return host
	}
	return net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10))
}
