package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"gopkg.in/yaml.v3"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// httpRule is one resource-style rule of proto/tollgate/admin/v1/http.yaml.
type httpRule struct {
	Selector string `yaml:"selector"`
	Get      string `yaml:"get"`
	Post     string `yaml:"post"`
	Put      string `yaml:"put"`
	Patch    string `yaml:"patch"`
	Delete   string `yaml:"delete"`
	Body     string `yaml:"body"`
}

func (r httpRule) verbPath() (string, string) {
	for _, vp := range [][2]string{{http.MethodGet, r.Get}, {http.MethodPost, r.Post}, {http.MethodPut, r.Put}, {http.MethodPatch, r.Patch}, {http.MethodDelete, r.Delete}} {
		if vp[1] != "" {
			return vp[0], vp[1]
		}
	}
	return "", ""
}

// httpRules reads the rules by full gRPC method ("/tollgate.admin.v1.KeyService/GetKey").
func httpRules(t *testing.T) map[string]httpRule {
	t.Helper()
	raw, err := os.ReadFile("../proto/tollgate/admin/v1/http.yaml")
	require.NoError(t, err)
	var doc struct {
		HTTP struct {
			Rules []httpRule `yaml:"rules"`
		} `yaml:"http"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	rules := map[string]httpRule{}
	for _, r := range doc.HTTP.Rules {
		i := strings.LastIndexByte(r.Selector, '.')
		rules["/"+r.Selector[:i]+"/"+r.Selector[i+1:]] = r
	}
	return rules
}

// resourceConn makes every unary call over the resource-style REST path of
// its rule, as curl would: path variables filled from the request's fields,
// the other fields as query parameters for GET and DELETE, the request as the
// JSON body otherwise; the caller's authorization metadata as the
// Authorization header. Errors are checked like restConn's.
type resourceConn struct {
	base   string
	client *http.Client
	rules  map[string]httpRule
}

var pathVar = regexp.MustCompile(`\{([a-z_.]+)(=[^}]*)?\}`)

func (c resourceConn) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	rule, ok := c.rules[method]
	if !ok {
		return fmt.Errorf("no resource path for %s in http.yaml", method)
	}
	verb, tmpl := rule.verbPath()
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(args.(proto.Message))
	if err != nil {
		return err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	flat := url.Values{}
	flatten("", fields, flat)
	path := pathVar.ReplaceAllStringFunc(tmpl, func(v string) string {
		name := pathVar.FindStringSubmatch(v)[1]
		val := flat.Get(name)
		flat.Del(name)
		return url.PathEscape(val)
	})
	var body io.Reader
	if rule.Body == "*" {
		body = bytes.NewReader(raw)
	} else if len(flat) > 0 {
		path += "?" + flat.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, verb, c.base+path, body)
	if err != nil {
		return err
	}
	return restReply(c.client, req, reply)
}

// flatten turns a JSON object into query parameters: nested fields dotted
// (scope.kind), repeated fields repeated.
func flatten(prefix string, v any, out url.Values) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if prefix != "" {
				k = prefix + "." + k
			}
			flatten(k, e, out)
		}
	case []any:
		for _, e := range x {
			flatten(prefix, e, out)
		}
	default:
		out.Add(prefix, fmt.Sprint(x))
	}
}

func (resourceConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, fmt.Errorf("resourceConn: streaming is not part of the REST API")
}

// resource returns a connection making calls over the resource-style paths.
func (e *env) resource(t *testing.T) resourceConn {
	t.Helper()
	rc := e.rest(t)
	return resourceConn{base: rc.base, client: rc.client, rules: httpRules(t)}
}

// TestRESTResourceRulesCoverEveryMethod: every RPC of every admin service has
// a resource-style rule, and the OpenAPI document lists its path.
func TestRESTResourceRulesCoverEveryMethod(t *testing.T) {
	rules := httpRules(t)
	var missing []string
	protoregistry.GlobalFiles.RangeFilesByPackage("tollgate.admin.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				m := "/" + string(s.FullName()) + "/" + string(s.Methods().Get(j).Name())
				if _, ok := rules[m]; !ok {
					missing = append(missing, m)
				}
			}
		}
		return true
	})
	sort.Strings(missing)
	require.Empty(t, missing, "methods without a rule in proto/tollgate/admin/v1/http.yaml")
	require.GreaterOrEqual(t, len(rules), 57)

	e := newEnv(t, memstore.New())
	e.rest(t)
	resp, err := http.Get(e.restBase + admin.OpenAPIPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	for m, r := range rules {
		verb, path := r.verbPath()
		path = pathVar.ReplaceAllString(path, "{$1}")
		require.Contains(t, doc.Paths, path, m)
		require.Contains(t, doc.Paths[path], strings.ToLower(verb), m)
		require.Contains(t, doc.Paths, m, "the POST path of %s stays", m)
	}
}

// TestRESTResourcePaths walks the common tasks over the resource paths with
// curl's view of them: create, list with a filter, get, patch, delete, the
// spend and ledger queries as GET with query parameters, and 404 for a
// missing id.
func TestRESTResourcePaths(t *testing.T) {
	e := newEnv(t, memstore.New())
	e.rest(t)
	do := func(verb, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(verb, e.restBase+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.adminKey)
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}
	code, m := do(http.MethodPost, "/v1/teams", `{"team": {"id": "red", "limits": {"rpm": 100}}}`)
	require.Equal(t, http.StatusOK, code, "%v", m)
	code, m = do(http.MethodPost, "/v1/keys", `{"team_id": "red", "alias": "ci"}`)
	require.Equal(t, http.StatusOK, code, "%v", m)
	require.True(t, strings.HasPrefix(m["secret"].(string), "tg-"))
	id := m["key"].(map[string]any)["id"].(string)

	code, m = do(http.MethodGet, "/v1/keys?team_id=red&page_size=10", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, m["keys"], 1)
	code, m = do(http.MethodGet, "/v1/keys/"+id, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ci", m["key"].(map[string]any)["alias"])
	code, m = do(http.MethodPatch, "/v1/keys/"+id, `{"alias": "ci-2", "update_mask": "alias"}`)
	require.Equal(t, http.StatusOK, code, "%v", m)
	require.Equal(t, "ci-2", m["key"].(map[string]any)["alias"])
	code, m = do(http.MethodPatch, "/v1/teams/red", `{"team": {"limits": {"rpm": 50}}, "update_mask": "limits.rpm"}`)
	require.Equal(t, http.StatusOK, code, "%v", m)
	require.Equal(t, "50", m["team"].(map[string]any)["limits"].(map[string]any)["rpm"])
	code, m = do(http.MethodGet, "/v1/spend?scope.kind=SCOPE_KIND_TEAM&scope.id=red&since=2026-01-01T00:00:00Z", "")
	require.Equal(t, http.StatusOK, code, "%v", m)
	code, m = do(http.MethodGet, "/v1/spend/series?scope.kind=SCOPE_KIND_GLOBAL&step=3600s", "")
	require.Equal(t, http.StatusOK, code, "%v", m)
	require.NotEmpty(t, m["points"])
	code, m = do(http.MethodGet, "/v1/ledger?scope.kind=SCOPE_KIND_KEY&scope.id="+id+"&page_size=5", "")
	require.Equal(t, http.StatusOK, code, "%v", m)
	code, m = do(http.MethodDelete, "/v1/keys/"+id, "")
	require.Equal(t, http.StatusOK, code, "%v", m)
	require.Equal(t, "KEY_STATUS_REVOKED", m["key"].(map[string]any)["status"])
	code, _ = do(http.MethodGet, "/v1/teams/nope", "")
	require.Equal(t, http.StatusNotFound, code)
	code, m = do(http.MethodGet, "/v1/whoami", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ADMIN_ROLE_ADMIN", m["credential"].(map[string]any)["role"])
}
