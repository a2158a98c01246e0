package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/xds"
)

// manifests are the decoded objects of deploy/kubernetes.
type manifests struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	secrets     map[string]*corev1.Secret
	configMaps  map[string]*corev1.ConfigMap
}

// decodeStrict decodes one YAML document into v with the Kubernetes API
// types' JSON form, rejecting unknown fields.
func decodeStrict(t *testing.T, doc []byte, v any) {
	t.Helper()
	js, err := yaml.YAMLToJSON(doc)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s", doc)
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	m := manifests{secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct{ APIVersion, Kind string }
			require.NoError(t, yaml.Unmarshal([]byte(doc), &head), f)
			switch head.APIVersion + " " + head.Kind {
			case "apps/v1 Deployment":
				var d appsv1.Deployment
				decodeStrict(t, []byte(doc), &d)
				m.deployments = append(m.deployments, &d)
			case "v1 Service":
				var s corev1.Service
				decodeStrict(t, []byte(doc), &s)
				m.services = append(m.services, &s)
			case "v1 Secret":
				var s corev1.Secret
				decodeStrict(t, []byte(doc), &s)
				m.secrets[s.Name] = &s
			case "v1 ConfigMap":
				var c corev1.ConfigMap
				decodeStrict(t, []byte(doc), &c)
				m.configMaps[c.Name] = &c
			default:
				t.Fatalf("%s: unexpected %s %s: teach this test its type", f, head.APIVersion, head.Kind)
			}
		}
	}
	return m
}

// runFlags are `tollgate run`'s flags and their defaults, from its -h.
func runFlags(t *testing.T) map[string]string {
	t.Helper()
	var out bytes.Buffer
	err := Run(context.Background(), []string{"run", "-h"}, &out, &out)
	require.True(t, err == nil || errors.Is(err, flag.ErrHelp), "%v", err) // run -h exits 0
	flags := map[string]string{}
	name := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if m := regexp.MustCompile(`^  -(\S+)`).FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = ""
		}
		if m := regexp.MustCompile(`\(default "?([^")]*)"?\)`).FindStringSubmatch(line); m != nil && name != "" {
			flags[name] = m[1]
		}
	}
	require.Contains(t, flags, "metrics-addr")
	return flags
}

// deployRunArgs reads a tollgate container's `run --flag=value` arguments over
// the flags' defaults.
func deployRunArgs(t *testing.T, c *corev1.Container, flags map[string]string) map[string]string {
	t.Helper()
	require.NotEmpty(t, c.Args, c.Name)
	require.Equal(t, "run", c.Args[0], c.Name)
	got := map[string]string{}
	for k, v := range flags {
		got[k] = v
	}
	for _, a := range c.Args[1:] {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		require.True(t, ok, "%s: write flags as --name=value: %q", c.Name, a)
		require.Contains(t, flags, k, "%s: tollgate run has no flag --%s", c.Name, k)
		got[k] = v
	}
	return got
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return int32(n)
}

// containerPort resolves a probe's or Service's port (a number or a name).
func containerPort(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if p.Type == intstr.Int && cp.ContainerPort == p.IntVal || p.Type == intstr.String && cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, p.String())
	return 0
}

func checkProbes(t *testing.T, c *corev1.Container, wantPort int32, live, ready []string) {
	t.Helper()
	require.NotNil(t, c.LivenessProbe, c.Name)
	require.NotNil(t, c.ReadinessProbe, c.Name)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		require.NotNil(t, p.HTTPGet, c.Name)
		require.Equal(t, wantPort, containerPort(t, c, p.HTTPGet.Port), "%s probe %s", c.Name, p.HTTPGet.Path)
	}
	require.Contains(t, live, c.LivenessProbe.HTTPGet.Path, c.Name)
	require.Contains(t, ready, c.ReadinessProbe.HTTPGet.Path, c.Name)
}

// The Kubernetes manifests decode strictly with the API types, and what they
// wire together is what the binaries serve: tollgate run's flags, ports,
// probe paths, the sidecar's socket in Envoy's bootstrap, secret names and
// keys, Service selectors and scrape annotations.
func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	flags := runFlags(t)
	src, err := os.ReadFile("run.go")
	require.NoError(t, err)

	var envoyDep, control *appsv1.Deployment
	for _, d := range m.deployments {
		require.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, d.Name)
		switch d.Name {
		case "envoy":
			envoyDep = d
		case "tollgate-control":
			control = d
		}
	}
	require.NotNil(t, envoyDep)
	require.NotNil(t, control)

	var sidecarSocket, listen string
	for _, d := range m.deployments {
		pod := &d.Spec.Template.Spec
		mounts := map[string]map[string]string{} // container → mountPath → volume
		for _, c := range pod.Containers {
			mounts[c.Name] = map[string]string{}
			for _, vm := range c.VolumeMounts {
				require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name }), "%s: volume %s", d.Name, vm.Name)
				mounts[c.Name][vm.MountPath] = vm.Name
			}
			for _, e := range c.Env {
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
					s := m.secrets[ref.SecretKeyRef.Name]
					require.NotNil(t, s, "%s/%s: secret %s", d.Name, c.Name, ref.SecretKeyRef.Name)
					_, inString := s.StringData[ref.SecretKeyRef.Key]
					_, inData := s.Data[ref.SecretKeyRef.Key]
					require.True(t, inString || inData, "secret %s has no key %s", s.Name, ref.SecretKeyRef.Key)
				}
				if c.Image != "" && strings.HasPrefix(c.Image, "tollgate") {
					require.Contains(t, string(src), `"`+e.Name+`"`, "tollgate run does not read $%s", e.Name)
				}
			}
		}
		for _, c := range pod.Containers {
			if !strings.HasPrefix(c.Image, "tollgate") {
				continue
			}
			args := deployRunArgs(t, &c, flags)
			metrics := port(t, args["metrics-addr"])
			require.NotEqual(t, "127.0.0.1", strings.Split(args["metrics-addr"], ":")[0], "%s: probes and Prometheus reach the metrics port from outside", c.Name)
			checkProbes(t, &c, metrics, []string{observe.PathLive}, []string{observe.PathReady})
			ann := d.Spec.Template.Annotations
			require.Equal(t, "true", ann["prometheus.io/scrape"], d.Name)
			require.Equal(t, strconv.Itoa(int(metrics)), ann["prometheus.io/port"], d.Name)
			require.Equal(t, "/metrics", ann["prometheus.io/path"], d.Name)
			sock, ok := strings.CutPrefix(args["extproc-addr"], "unix:")
			require.True(t, ok, "%s: the processor listens on a Unix socket", c.Name)
			require.Contains(t, mounts[c.Name], path.Dir(sock), "%s: the socket's directory is a volume", c.Name)
			if d.Name == "envoy" {
				sidecarSocket = sock
				// Envoy reaches the same socket through the same volume.
				require.Equal(t, mounts[c.Name][path.Dir(sock)], mounts["envoy"][path.Dir(sock)], "the socket volume is shared with envoy")
			} else {
				listen = args["listen"]
				for _, name := range []string{"admin-addr", "xds-addr"} {
					p := port(t, args[name])
					require.NotZero(t, containerPort(t, &c, intstr.FromInt32(p)), name)
				}
			}
		}
	}
	require.NotEmpty(t, sidecarSocket)

	// Envoy: the listener the control plane programs is its container port;
	// the health routes xDS emits are its probes.
	var envoyC *corev1.Container
	for i := range envoyDep.Spec.Template.Spec.Containers {
		if c := &envoyDep.Spec.Template.Spec.Containers[i]; c.Name == "envoy" {
			envoyC = c
		}
	}
	require.NotNil(t, envoyC)
	checkProbes(t, envoyC, port(t, listen), xds.HealthPaths, xds.HealthPaths)

	// The bootstrap: exactly what `tollgate envoy bootstrap` prints for the
	// control plane's Service and the sidecar's socket, mounted where Envoy
	// reads it.
	var xdsSvc *corev1.Service
	for _, s := range m.services {
		if s.Name == control.Name {
			xdsSvc = s
		}
	}
	require.NotNil(t, xdsSvc)
	var xdsPort int32
	for _, p := range xdsSvc.Spec.Ports {
		if p.Name == "xds" {
			xdsPort = p.Port
		}
	}
	require.NotZero(t, xdsPort)
	want, err := envoy.Bootstrap(envoy.BootstrapOptions{
		XDS: net.JoinHostPort(xdsSvc.Name, strconv.Itoa(int(xdsPort))), ExtProc: "unix:" + sidecarSocket, NodeID: "envoy-k8s",
	})
	require.NoError(t, err)
	cm := m.configMaps["envoy-bootstrap"]
	require.NotNil(t, cm)
	require.Equal(t, string(want), cm.Data["envoy.yaml"], "regenerate with the command in the ConfigMap's comment")
	require.Equal(t, []string{"-c", "/etc/envoy/envoy.yaml", "--log-level", "info"}, envoyC.Args)

	// Services select their Deployment's pods and name ports they have.
	for _, s := range m.services {
		var d *appsv1.Deployment
		for _, dep := range m.deployments {
			if dep.Name == s.Name {
				d = dep
			}
		}
		require.NotNil(t, d, "service %s has no deployment of its name", s.Name)
		require.Equal(t, d.Spec.Template.Labels, s.Spec.Selector, s.Name)
		for _, p := range s.Spec.Ports {
			found := false
			for i := range d.Spec.Template.Spec.Containers {
				for _, cp := range d.Spec.Template.Spec.Containers[i].Ports {
					found = found || cp.Name == p.TargetPort.StrVal || cp.ContainerPort == p.TargetPort.IntVal
				}
			}
			require.True(t, found, "service %s port %s", s.Name, p.Name)
		}
	}
}

// The compose files run as written: every tollgate service's flags exist,
// none asks the tollgate image for a child Envoy (it has none), published
// metrics ports are the ones --metrics-addr serves, and the sidecar variant's
// Envoy bootstrap is what `tollgate envoy bootstrap` prints for it.
func TestComposeFiles(t *testing.T) {
	flags := runFlags(t)
	files, err := filepath.Glob("../../deploy/compose/*.yaml")
	require.NoError(t, err)
	files = append(files, "../../deploy/envoy/compose.yaml")
	composes := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc struct {
			Services map[string]struct {
				Image      string   `json:"image"`
				Entrypoint []string `json:"entrypoint"`
				Command    []string `json:"command"`
				Ports      []string `json:"ports"`
			} `json:"services"`
		}
		require.NoError(t, yaml.Unmarshal(b, &doc), f)
		if len(doc.Services) == 0 {
			continue // the bootstrap file
		}
		composes++
		for name, s := range doc.Services {
			if s.Image != "tollgate:dev" || len(s.Entrypoint) > 0 {
				continue
			}
			c := &corev1.Container{Name: name, Args: s.Command}
			args := deployRunArgs(t, c, flags)
			require.NotEqual(t, "envoy", args["dataplane"], "%s/%s: the tollgate image has no Envoy", f, name)
			require.NotEqual(t, "auto", args["dataplane"], "%s/%s: say which data plane", f, name)
			metrics := strconv.Itoa(int(port(t, args["metrics-addr"])))
			published := false
			for _, p := range s.Ports {
				published = published || strings.HasSuffix(p, ":"+metrics)
			}
			require.True(t, published, "%s/%s publishes its metrics port %s", f, name, metrics)
		}
	}
	require.Equal(t, 3, composes)

	want, err := envoy.Bootstrap(envoy.BootstrapOptions{
		XDS: "control:18000", ExtProc: "unix:/var/run/tollgate/extproc.sock", NodeID: "envoy-compose-sidecar",
	})
	require.NoError(t, err)
	got, err := os.ReadFile("../../deploy/compose/envoy-bootstrap.yaml")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "regenerate with the command in deploy/compose/envoy.yaml")
}
