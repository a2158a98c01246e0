package xds

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	fileaccesslogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/envoy"
)

// Filter and access logger names, as Envoy registers them.
const (
	hcmFilterName  = "envoy.filters.network.http_connection_manager"
	fileAccessLog  = "envoy.access_loggers.file"
	accessLogPath  = "/dev/stdout"
	tlsSocketName  = "envoy.transport_sockets.tls"
	httpOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// accessLogFormat is the JSON access log line: one object per request.
// Authorization and provider keys are never logged.
var accessLogFormat = map[string]any{
	"start_time":            "%START_TIME%",
	"request_id":            "%REQ(X-REQUEST-ID)%",
	"method":                "%REQ(:METHOD)%",
	"path":                  "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
	"protocol":              "%PROTOCOL%",
	"route_name":            "%ROUTE_NAME%",
	"deployment":            "%REQ(" + envoy.RouteHeader + ")%",
	"upstream_cluster":      "%UPSTREAM_CLUSTER%",
	"upstream_host":         "%UPSTREAM_HOST%",
	"status":                "%RESPONSE_CODE%",
	"response_code_details": "%RESPONSE_CODE_DETAILS%",
	"response_flags":        "%RESPONSE_FLAGS%",
	"duration_ms":           "%DURATION%",
	"request_duration_ms":   "%REQUEST_DURATION%",
	"response_duration_ms":  "%RESPONSE_DURATION%",
	"upstream_service_ms":   "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
	"bytes_received":        "%BYTES_RECEIVED%",
	"bytes_sent":            "%BYTES_SENT%",
}

// makeListener builds envoy.ListenerName: the HTTP connection manager with
// ext_proc then the router, routes over ADS.
func (b *builder) listener() *listenerv3.Listener {
	in := b.in
	return &listenerv3.Listener{
		Name:    envoy.ListenerName,
		Address: socketAddress(in.Listener.Host, in.Listener.Port),
		// The request body limit: ext_proc buffers the whole body (BUFFERED)
		// and Envoy answers 413 above it (spec R1.5b, G1).
		PerConnectionBufferLimitBytes: wrapperspb.UInt32(uint32(in.MaxRequestBodyBytes)),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{
				Name:       hcmFilterName,
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: b.any(b.hcm())},
			}},
		}},
	}
}

func (b *builder) hcm() *hcmv3.HttpConnectionManager {
	in := b.in
	format, err := structpb.NewStruct(accessLogFormat)
	b.fail("access log format", err)
	accessLog := &fileaccesslogv3.FileAccessLog{
		Path: accessLogPath,
		AccessLogFormat: &fileaccesslogv3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: format},
		}},
	}
	return &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: envoy.StatPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: envoy.RouteConfigName,
		}},
		// The route idle_timeout overrides this per route; it also covers
		// requests that match no route.
		StreamIdleTimeout: durationpb.New(in.RouteIdleTimeout),
		// Edge-proxy settings: the client address is the peer's, and no
		// client is "internal" by its headers, so x-envoy-* request headers
		// from clients are not trusted. Paths are normalized before the
		// processor and the routes see them.
		UseRemoteAddress: wrapperspb.Bool(true),
		NormalizePath:    wrapperspb.Bool(true),
		MergeSlashes:     true,
		AccessLog: []*accesslogv3.AccessLog{{
			Name:       fileAccessLog,
			ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: b.any(accessLog)},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{
				Name:       envoy.ExtProcFilter,
				ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: b.any(b.extProc())},
			},
			{
				Name:       envoy.RouterFilter,
				ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: b.any(&routerv3.Router{})},
			},
		},
	}
}

// extProc is the ext_proc filter exactly as spec §6.
func (b *builder) extProc() *extprocfilterv3.ExternalProcessor {
	in := b.in
	return &extprocfilterv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
				ClusterName: envoy.ExtProcCluster,
			}},
		},
		// Translation and accounting must never fail open.
		FailureModeAllow: false,
		ProcessingMode: &extprocfilterv3.ProcessingMode{
			// SEND holds the headers until the body reply, so the processor
			// can route on the body (R3.3).
			RequestHeaderMode:   extprocfilterv3.ProcessingMode_SEND,
			RequestBodyMode:     extprocfilterv3.ProcessingMode_BUFFERED,
			RequestTrailerMode:  extprocfilterv3.ProcessingMode_SKIP,
			ResponseHeaderMode:  extprocfilterv3.ProcessingMode_SEND,
			ResponseBodyMode:    extprocfilterv3.ProcessingMode_BUFFERED, // STREAMED by mode_override for SSE
			ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
		},
		AllowModeOverride: true,
		MessageTimeout:    durationpb.New(in.MessageTimeout),
		MaxMessageTimeout: durationpb.New(in.MaxMessageTimeout),
		// The processor sets clear_route_cache with the routing header.
		RouteCacheAction: extprocfilterv3.ExternalProcessor_DEFAULT,
		MutationRules:    &mutationrulesv3.HeaderMutationRules{DisallowIsError: wrapperspb.Bool(true)},
		MetadataOptions: &extprocfilterv3.MetadataOptions{
			ReceivingNamespaces: &extprocfilterv3.MetadataOptions_MetadataNamespaces{
				Untyped: []string{envoy.MetadataNamespace},
			},
		},
		RequestAttributes: []string{"xds.route_name"},
		StatPrefix:        envoy.StatPrefix,
	}
}

// adsConfigSource fetches a resource over the bootstrap's ADS stream.
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      corev3.SocketAddress_TCP,
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}
