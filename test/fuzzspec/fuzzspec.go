// Package fuzzspec turns a handful of primitive values (the arguments of a
// Go fuzz target) into a custom resource of every app-operator kind. The
// fuzz targets of the builders use it, and so does the controller suite,
// which feeds the same inputs (the committed seed corpus and a fixed
// pseudo-random sample) through the real API server.
//
// Each kind has an Input struct. Its fields, in order, are the arguments of
// the kind's fuzz target and the values of a corpus entry (see Args,
// SetArgs and ReadCorpus).
package fuzzspec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/api/podsecurity"
)

// Name makes a DNS label (what the API server admits as the name of every
// kind) out of any string, so that a fuzzed name always names its children.
func Name(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := "a" + b.String()
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.TrimRight(n, "-")
}

// pick returns the i-th choice, wrapping around.
func pick[T any](i uint8, choices ...T) T { return choices[int(i)%len(choices)] }

func profile(i uint8) podsecurity.Profile {
	return pick(i, "", podsecurity.Baseline, podsecurity.Restricted)
}

// quantities returns a ResourceList of the positive values among cpu (in
// millicores) and memory (in MiB); zero or negative values are left out.
func quantities(cpuMilli, memoryMi int64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpuMilli > 0 {
		l[corev1.ResourceCPU] = resource.MustParse(strconv.FormatInt(cpuMilli, 10) + "m")
	}
	if memoryMi > 0 {
		l[corev1.ResourceMemory] = resource.MustParse(strconv.FormatInt(memoryMi, 10) + "Mi")
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// AppServiceInput is the fuzzed part of an AppService (or WebService).
type AppServiceInput struct {
	Name        string
	Size        int32
	Image       string
	Port        int32
	TargetPort  int32 // 0: unset
	NodePort    int32 // 0: unset
	Protocol    uint8 // unset, TCP, UDP, SCTP
	ServiceType uint8 // unset, ClusterIP, NodePort, LoadBalancer
	PortName    string
	SecondPort  bool // adds a second port, Port+1, named PortName+"-b"
	EnvName     string
	EnvValue    string
	LabelKey    string
	LabelValue  string
	CPUMilli    int64 // request; <= 0: none
	MemoryMi    int64 // limit; <= 0: none
	Profile     uint8 // unset, Baseline, Restricted
}

// Spec returns the AppService spec of the input.
func (in AppServiceInput) Spec() appv1.AppServiceSpec {
	spec := appv1.AppServiceSpec{
		Size:        ptr.To(in.Size),
		Image:       in.Image,
		ServiceType: pick[corev1.ServiceType](in.ServiceType, "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer),
		Settings:    podsecurity.Settings{SecurityProfile: profile(in.Profile)},
		Resources:   corev1.ResourceRequirements{Requests: quantities(in.CPUMilli, 0), Limits: quantities(0, in.MemoryMi)},
	}
	p := appv1.ServicePort{
		Name:     in.PortName,
		Port:     in.Port,
		NodePort: in.NodePort,
		Protocol: pick[corev1.Protocol](in.Protocol, "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP),
	}
	if in.TargetPort != 0 {
		p.TargetPort = ptr.To(intstr.FromInt32(in.TargetPort))
	}
	spec.Ports = []appv1.ServicePort{p}
	if in.SecondPort {
		q := p
		q.Name, q.Port, q.TargetPort = in.PortName+"-b", in.Port+1, nil
		if q.NodePort != 0 {
			q.NodePort++
		}
		spec.Ports = append(spec.Ports, q)
	}
	if in.EnvName != "" {
		spec.Envs = []corev1.EnvVar{{Name: in.EnvName, Value: in.EnvValue}}
	}
	if in.LabelKey != "" {
		spec.PodLabels = map[string]string{in.LabelKey: in.LabelValue}
		spec.PodAnnotations = map[string]string{in.LabelKey: in.LabelValue}
	}
	return spec
}

// AppService returns the input as an AppService in namespace ns.
func (in AppServiceInput) AppService(ns string) *appv1.AppService {
	return &appv1.AppService{
		TypeMeta:   metav1.TypeMeta{APIVersion: appv1.GroupVersion.String(), Kind: "AppService"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(in.Name), Namespace: ns},
		Spec:       in.Spec(),
	}
}

// WebService returns the input as a WebService in namespace ns.
func (in AppServiceInput) WebService(ns string) *appv1.WebService {
	return &appv1.WebService{
		TypeMeta:   metav1.TypeMeta{APIVersion: appv1.GroupVersion.String(), Kind: "WebService"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(in.Name), Namespace: ns},
		Spec:       in.Spec(),
	}
}

// MemcachedInput is the fuzzed part of a Memcached.
type MemcachedInput struct {
	Name         string
	Size         int32
	Image        string // empty: the default
	Resources    bool   // false: the default resources
	CPUMilli     int64  // request; <= 0: none
	MemoryMi     int64  // request; <= 0: none
	MemoryLimMi  int64  // limit; <= 0: none
	Profile      uint8  // unset, Baseline, Restricted
	OwnPodUserID int64  // > 0: a podSecurityContext of the user's own with this runAsUser
}

// Memcached returns the input as a Memcached in namespace ns.
func (in MemcachedInput) Memcached(ns string) *cachev1alpha1.Memcached {
	spec := cachev1alpha1.MemcachedSpec{
		Size:     in.Size,
		Image:    in.Image,
		Settings: podsecurity.Settings{SecurityProfile: profile(in.Profile)},
	}
	if in.Resources {
		spec.Resources = &corev1.ResourceRequirements{Requests: quantities(in.CPUMilli, in.MemoryMi), Limits: quantities(0, in.MemoryLimMi)}
	}
	if in.OwnPodUserID > 0 {
		spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(in.OwnPodUserID)}
	}
	return &cachev1alpha1.Memcached{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.GroupVersion.String(), Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(in.Name), Namespace: ns},
		Spec:       spec,
	}
}

// MyWebInput is the fuzzed part of a MyWeb.
type MyWebInput struct {
	Name     string
	Image    string
	NodePort int32
	Page     string
	Replicas int32 // negative: unset
	Profile  uint8 // unset, Baseline, Restricted
}

// MyWeb returns the input as a MyWeb in namespace ns.
func (in MyWebInput) MyWeb(ns string) *operatorv1.MyWeb {
	spec := operatorv1.MyWebSpec{
		Image:           in.Image,
		NodePortNumber:  in.NodePort,
		PageContentHtml: in.Page,
		Settings:        podsecurity.Settings{SecurityProfile: profile(in.Profile)},
	}
	if in.Replicas >= 0 {
		spec.Replicas = ptr.To(in.Replicas)
	}
	return &operatorv1.MyWeb{
		TypeMeta:   metav1.TypeMeta{APIVersion: operatorv1.GroupVersion.String(), Kind: "MyWeb"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(in.Name), Namespace: ns},
		Spec:       spec,
	}
}

// MicroServiceDeployInput is the fuzzed part of a MicroServiceDeploy.
type MicroServiceDeployInput struct {
	Name           string
	MsName         string
	Version        string
	Path           string
	Image          string
	Replicas       int32 // negative: unset
	Autoscaling    bool
	NeedAuth       bool
	Idle           bool
	Config         string
	MaxReplicas    int32 // <= 0: unset
	TargetCPU      int32 // <= 0: unset
	CPUMilli       int64 // request and limit; <= 0: none
	MemoryMi       int64 // request; <= 0: none
	MemoryLimMi    int64 // limit; <= 0: none
	SecretName     string
	Port           int32 // <= 0: unset
	Profile        uint8 // unset, Baseline, Restricted
	CreationMillis int64 // negative: unset
	Expose         uint8 // the operator's options: see Exposure
	// Holder is the instance holding the host this one wants; empty when
	// this one holds it (or nobody else wants it).
	Holder string
}

// Exposure returns the operator-wide MicroServiceDeploy options the input
// selects: no base domain; a base domain; or a base domain, an Ingress
// class and an external authentication endpoint.
func (in MicroServiceDeployInput) Exposure() (baseDomain, ingressClass, authURL string) {
	switch in.Expose % 3 {
	case 1:
		return "apps.example.com", "", ""
	case 2:
		return "apps.example.com", "nginx", "https://auth.example.com/check"
	}
	return "", "", ""
}

// MicroServiceDeploy returns the input as a MicroServiceDeploy in namespace
// ns. spec.fullName is the name, as the API server requires.
func (in MicroServiceDeployInput) MicroServiceDeploy(ns string) *customv1.MicroServiceDeploy {
	name := Name(in.Name)
	spec := customv1.MicroServiceDeploySpec{
		MsName:           in.MsName,
		FullName:         name,
		Version:          in.Version,
		Path:             in.Path,
		Image:            in.Image,
		Autoscaling:      in.Autoscaling,
		NeedAuth:         in.NeedAuth,
		Idle:             in.Idle,
		Config:           in.Config,
		ConfigSecretName: in.SecretName,
		Settings:         podsecurity.Settings{SecurityProfile: profile(in.Profile)},
		ResourceRequirements: customv1.ResourceRequirements{
			Requests: quantities(in.CPUMilli, in.MemoryMi),
			Limits:   quantities(in.CPUMilli, in.MemoryLimMi),
		},
	}
	if in.Replicas >= 0 {
		spec.Replicas = ptr.To(in.Replicas)
	}
	if in.MaxReplicas > 0 {
		spec.AutoscalingMaxReplicas = ptr.To(in.MaxReplicas)
	}
	if in.TargetCPU > 0 {
		spec.AutoscalingTargetCPUUtilization = ptr.To(in.TargetCPU)
	}
	if in.Port > 0 {
		spec.Port = ptr.To(in.Port)
	}
	if in.CreationMillis >= 0 {
		spec.CreationTimestamp = strconv.FormatInt(in.CreationMillis, 10)
	}
	return &customv1.MicroServiceDeploy{
		TypeMeta:   metav1.TypeMeta{APIVersion: customv1.GroupVersion.String(), Kind: "MicroServiceDeploy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       spec,
	}
}

// Args returns the fields of an Input struct, in order: the arguments of
// its fuzz target, for testing.F.Add.
func Args(in any) []any {
	v := reflect.ValueOf(in)
	out := make([]any, v.NumField())
	for i := range out {
		out[i] = v.Field(i).Interface()
	}
	return out
}

// SetArgs sets the fields of the Input struct in points to from args, as
// read from a corpus entry. The types must match field by field.
func SetArgs(in any, args []any) error {
	v := reflect.ValueOf(in).Elem()
	if len(args) != v.NumField() {
		return fmt.Errorf("%d values for the %d fields of %s", len(args), v.NumField(), v.Type())
	}
	for i, a := range args {
		f := v.Field(i)
		av := reflect.ValueOf(a)
		if av.Type() != f.Type() {
			return fmt.Errorf("value %d is a %s, field %s of %s is a %s", i, av.Type(), v.Type().Field(i).Name, v.Type(), f.Type())
		}
		f.Set(av)
	}
	return nil
}

// ReadCorpus reads every entry of a seed corpus directory
// (testdata/fuzz/FuzzXxx) into the Input struct type of in, returning one
// value of that type per entry, by file name.
func ReadCorpus[T any](dir string) (map[string]T, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	out := map[string]T{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		args, err := parseEntry(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		var in T
		if err := SetArgs(&in, args); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[filepath.Base(f)] = in
	}
	return out, nil
}

// parseEntry reads a corpus entry in the "go test fuzz v1" format, for the
// types the Input structs use.
func parseEntry(data []byte) ([]any, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" {
		return nil, fmt.Errorf("not a corpus entry: want the header %q", "go test fuzz v1")
	}
	var args []any
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		typ, val, ok := strings.Cut(line, "(")
		if !ok || !strings.HasSuffix(val, ")") {
			return nil, fmt.Errorf("malformed value %q", line)
		}
		val = strings.TrimSuffix(val, ")")
		var a any
		var err error
		switch typ {
		case "string":
			a, err = strconv.Unquote(val)
		case "bool":
			a, err = strconv.ParseBool(val)
		case "int32":
			var n int64
			n, err = strconv.ParseInt(val, 0, 32)
			a = int32(n)
		case "int64":
			a, err = strconv.ParseInt(val, 0, 64)
		case "byte", "uint8":
			var n uint64
			if strings.HasPrefix(val, "'") {
				// go test writes a byte as a quoted rune.
				var s string
				if s, err = strconv.Unquote(val); err == nil {
					r, _ := utf8.DecodeRuneInString(s)
					n = uint64(r)
				}
			} else {
				n, err = strconv.ParseUint(val, 0, 8)
			}
			a = uint8(n)
		default:
			return nil, fmt.Errorf("unsupported type %q", typ)
		}
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", line, err)
		}
		args = append(args, a)
	}
	return args, sc.Err()
}

// Encode writes the fields of an Input struct as a corpus entry in the
// "go test fuzz v1" format, for a seed corpus under testdata/fuzz.
func Encode(in any) []byte { return EncodeArgs(Args(in)...) }

// EncodeArgs writes the arguments of a fuzz target as a corpus entry.
func EncodeArgs(args ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case uint8:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return b.Bytes()
}
