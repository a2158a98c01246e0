package edge

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// Envoy defaults for fields the configuration leaves unset.
const (
	defaultBufferLimit    = 1 << 20
	defaultMessageTimeout = 200 * time.Millisecond
	defaultStreamIdle     = 5 * time.Minute
	defaultMaxHeadersKB   = 60
	defaultMaxHeaders     = 100
)

// listenerConf is the compiled gateway listener.
type listenerConf struct {
	name        string
	addr        string // host:port from the socket address
	bufferLimit int
	// rdsName is the route configuration to fetch; inline is used instead
	// when the HCM carries route_config.
	rdsName      string
	inline       *routev3.RouteConfiguration
	extProc      *extprocfilter.Config // nil: no ext_proc filter
	streamIdle   time.Duration         // 0: disabled
	maxHeadersKB int
	maxHeaders   int
	// headersTimeout and idleTimeout are the HCM's request_headers_timeout
	// and common_http_protocol_options.idle_timeout; 0: h1's defaults.
	headersTimeout time.Duration
	idleTimeout    time.Duration
}

// compileListener reads l on top of base, the ext_proc client settings that
// the configuration does not carry (version toggles).
func compileListener(l *listenerv3.Listener, base extprocfilter.Config) (*listenerConf, error) {
	if err := l.ValidateAll(); err != nil {
		return nil, err
	}
	lc := &listenerConf{name: l.GetName(), bufferLimit: defaultBufferLimit}
	sa := l.GetAddress().GetSocketAddress()
	if sa == nil {
		return nil, fmt.Errorf("listener %q: only socket addresses are supported", l.GetName())
	}
	lc.addr = net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
	if v := l.GetPerConnectionBufferLimitBytes(); v != nil {
		lc.bufferLimit = int(v.GetValue())
	}
	chains := l.GetFilterChains()
	if len(chains) != 1 || len(chains[0].GetFilters()) != 1 {
		return nil, fmt.Errorf("listener %q: want one filter chain with one network filter", l.GetName())
	}
	var hcm hcmv3.HttpConnectionManager
	if err := chains[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return nil, fmt.Errorf("listener %q: network filter: %w", l.GetName(), err)
	}
	if err := lc.readHCM(&hcm, base); err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.GetName(), err)
	}
	return lc, nil
}

func (lc *listenerConf) readHCM(hcm *hcmv3.HttpConnectionManager, base extprocfilter.Config) error {
	switch {
	case hcm.GetRds() != nil:
		if hcm.GetRds().GetConfigSource().GetAds() == nil {
			return errors.New("RDS must come over ADS")
		}
		lc.rdsName = hcm.GetRds().GetRouteConfigName()
	case hcm.GetRouteConfig() != nil:
		lc.inline = hcm.GetRouteConfig()
	default:
		return errors.New("the HTTP connection manager needs rds or route_config")
	}
	lc.streamIdle = defaultStreamIdle
	if d := hcm.GetStreamIdleTimeout(); d != nil {
		lc.streamIdle = d.AsDuration()
	}
	lc.maxHeadersKB = defaultMaxHeadersKB
	if v := hcm.GetMaxRequestHeadersKb(); v != nil {
		lc.maxHeadersKB = int(v.GetValue())
	}
	lc.maxHeaders = defaultMaxHeaders
	if v := hcm.GetCommonHttpProtocolOptions().GetMaxHeadersCount(); v != nil {
		lc.maxHeaders = int(v.GetValue())
	}
	if d := hcm.GetRequestHeadersTimeout(); d != nil {
		lc.headersTimeout = d.AsDuration()
	}
	if d := hcm.GetCommonHttpProtocolOptions().GetIdleTimeout(); d != nil {
		lc.idleTimeout = d.AsDuration()
	}
	filters := hcm.GetHttpFilters()
	if len(filters) == 0 {
		return errors.New("no HTTP filters: the router is required")
	}
	for i, f := range filters {
		last := i == len(filters)-1
		msg, err := f.GetTypedConfig().UnmarshalNew()
		if err != nil {
			if f.GetIsOptional() {
				continue
			}
			return fmt.Errorf("http filter %q: %w", f.GetName(), err)
		}
		switch cfg := msg.(type) {
		case *routerv3.Router:
			if !last {
				return errors.New("the router must be the last HTTP filter")
			}
		case *extprocfilterv3.ExternalProcessor:
			if lc.extProc != nil {
				return errors.New("only one ext_proc filter is supported")
			}
			if f.GetDisabled() {
				continue
			}
			c, err := extProcConfig(cfg, base, lc)
			if err != nil {
				return fmt.Errorf("ext_proc: %w", err)
			}
			lc.extProc = &c
		default:
			if f.GetIsOptional() {
				continue
			}
			return fmt.Errorf("http filter %q (%s) is not supported", f.GetName(), proto.MessageName(msg))
		}
		if last {
			if _, ok := msg.(*routerv3.Router); !ok {
				return errors.New("the last HTTP filter must be the router")
			}
		}
	}
	return nil
}

// extProcConfig is the extprocfilter configuration of an ext_proc filter.
func extProcConfig(f *extprocfilterv3.ExternalProcessor, base extprocfilter.Config, lc *listenerConf) (extprocfilter.Config, error) {
	switch {
	case f.GetObservabilityMode():
		return base, errors.New("observability_mode is not supported")
	case f.GetSendBodyWithoutWaitingForHeaderResponse():
		return base, errors.New("send_body_without_waiting_for_header_response is not supported")
	case f.GetHttpService() != nil:
		return base, errors.New("http_service is not supported")
	case f.GetDisableClearRouteCache() && f.GetRouteCacheAction() != extprocfilterv3.ExternalProcessor_DEFAULT:
		return base, errors.New("disable_clear_route_cache and route_cache_action are exclusive")
	}
	c := base
	c.Mode = proto.Clone(f.GetProcessingMode()).(*extprocfilterv3.ProcessingMode)
	if f.GetProcessingMode() == nil {
		c.Mode = &extprocfilterv3.ProcessingMode{}
	}
	c.AllowModeOverride = f.GetAllowModeOverride()
	c.AllowedOverrideModes = f.GetAllowedOverrideModes()
	c.MessageTimeout = defaultMessageTimeout
	if d := f.GetMessageTimeout(); d != nil {
		c.MessageTimeout = d.AsDuration()
	}
	c.MaxMessageTimeout = 0
	if d := f.GetMaxMessageTimeout(); d != nil {
		c.MaxMessageTimeout = d.AsDuration()
	}
	c.FailureModeAllow = f.GetFailureModeAllow()
	c.StatusOnError = 500
	if s := f.GetStatusOnError(); s != nil && s.GetCode() != 0 {
		c.StatusOnError = int(s.GetCode())
	}
	c.RouteCacheAction = f.GetRouteCacheAction()
	if f.GetDisableClearRouteCache() {
		c.RouteCacheAction = extprocfilterv3.ExternalProcessor_RETAIN
	}
	r := f.GetMutationRules()
	c.DisallowIsError = r.GetDisallowIsError().GetValue()
	c.AllowAllRouting = r.GetAllowAllRouting().GetValue()
	c.AllowEnvoy = r.GetAllowEnvoy().GetValue()
	c.DisallowSystem = r.GetDisallowSystem().GetValue()
	c.DisallowAll = r.GetDisallowAll().GetValue()
	if r.GetAllowExpression() != nil || r.GetDisallowExpression() != nil {
		return base, errors.New("mutation_rules expressions are not supported")
	}
	c.AllowContentLengthHeader = f.GetAllowContentLengthHeader()
	c.RequestBufferLimit = lc.bufferLimit
	c.ResponseBufferLimit = lc.bufferLimit
	c.MaxHeadersCount = lc.maxHeaders
	c.MaxHeadersKB = lc.maxHeadersKB
	if err := c.Validate(); err != nil {
		return base, err
	}
	return c, nil
}

// socketAddr is host:port of a socket address, or a unix path.
func socketAddr(a *corev3.Address) (network, addr string, err error) {
	switch {
	case a.GetSocketAddress() != nil:
		sa := a.GetSocketAddress()
		if sa.GetPortValue() == 0 {
			return "", "", fmt.Errorf("endpoint %q has no port", sa.GetAddress())
		}
		return "tcp", net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))), nil
	case a.GetPipe() != nil:
		return "unix", a.GetPipe().GetPath(), nil
	}
	return "", "", errors.New("unsupported endpoint address")
}
