package fuzzspec

import (
	"math/rand/v2"
	"strings"
)

// Random draws inputs from a fixed seed: mostly values a user would write,
// often values at or beyond a limit of the schema, and sometimes strings
// the schema does not constrain at all. The same seed gives the same inputs.
type Random struct{ r *rand.Rand }

// NewRandom returns a generator with the given seed.
func NewRandom(seed uint64) *Random { return &Random{rand.New(rand.NewPCG(seed, seed^0x5eed))} }

func (g *Random) oneIn(n int) bool { return g.r.IntN(n) == 0 }

// int32Of returns a number in [lo, hi] or, a third of the time, one of
// the edge values.
func (g *Random) int32Of(lo, hi int32, edges ...int32) int32 {
	if len(edges) > 0 && g.oneIn(3) {
		return edges[g.r.IntN(len(edges))]
	}
	return lo + int32(g.r.Int64N(int64(hi)-int64(lo)+1))
}

const (
	lower    = "abcdefghijklmnopqrstuvwxyz"
	digits   = "0123456789"
	oddChars = " -_./:=@#$%^&*()[]{}<>!?~`'\"\\\t\n日本語é"
)

// word returns a string of n characters of alphabet.
func (g *Random) word(n int, alphabet string) string {
	chars := []rune(alphabet)
	var b strings.Builder
	for range n {
		b.WriteRune(chars[g.r.IntN(len(chars))])
	}
	return b.String()
}

// label returns a DNS label of at most n characters, or, one time in odd,
// any string of up to n characters.
func (g *Random) label(n, odd int) string {
	size := 1 + g.r.IntN(n)
	if odd > 0 && g.oneIn(odd) {
		return g.word(size, lower+digits+oddChars+"ABC")
	}
	s := g.word(1, lower) + g.word(size-1, lower+digits+"-")
	return strings.TrimRight(s, "-")
}

func (g *Random) image() string {
	switch g.r.IntN(6) {
	case 0:
		return ""
	case 1:
		return "registry.example.com:5000/" + g.label(20, 0) + ":" + g.label(8, 0)
	case 2:
		return g.word(1+g.r.IntN(12), lower+digits+oddChars)
	default:
		return g.label(12, 0) + ":1." + g.word(1, digits)
	}
}

func (g *Random) quantity(max int64) int64 {
	switch g.r.IntN(5) {
	case 0:
		return 0
	case 1:
		return -1
	default:
		return 1 + g.r.Int64N(max)
	}
}

// AppService draws an AppServiceInput.
func (g *Random) AppService() AppServiceInput {
	in := AppServiceInput{
		Name:        g.label(30, 4),
		Size:        g.int32Of(0, 10, -1, 0, 1000),
		Image:       g.image(),
		Port:        g.int32Of(1, 65535, 0, 1, 80, 65535, 65536),
		Protocol:    uint8(g.r.IntN(4)),
		ServiceType: uint8(g.r.IntN(4)),
		SecondPort:  g.oneIn(3),
		CPUMilli:    g.quantity(4000),
		MemoryMi:    g.quantity(8192),
		Profile:     uint8(g.r.IntN(3)),
	}
	if g.oneIn(2) {
		in.TargetPort = g.int32Of(1, 65535, 0, -1, 65536)
	}
	if g.oneIn(2) {
		in.NodePort = g.int32Of(30000, 32766, 1, 80, 29999, 32768, 65535)
	}
	if in.SecondPort || g.oneIn(2) {
		in.PortName = g.label(12, 6)
	}
	if g.oneIn(2) {
		in.EnvName = g.label(16, 3)
		in.EnvValue = g.word(g.r.IntN(20), lower+oddChars)
	}
	if g.oneIn(2) {
		in.LabelKey = g.label(20, 3)
		in.LabelValue = g.label(20, 3)
	}
	return in
}

// Memcached draws a MemcachedInput.
func (g *Random) Memcached() MemcachedInput {
	in := MemcachedInput{
		Name:        g.label(30, 4),
		Size:        g.int32Of(0, 8, -1, 1, 256, 257),
		Resources:   g.oneIn(2),
		CPUMilli:    g.quantity(4000),
		MemoryMi:    g.quantity(4096),
		MemoryLimMi: g.quantity(4096),
		Profile:     uint8(g.r.IntN(3)),
	}
	if g.oneIn(2) {
		in.Image = g.image()
	}
	if g.oneIn(4) {
		in.OwnPodUserID = int64(g.int32Of(1, 65535, 0, 11211))
	}
	return in
}

// MyWeb draws a MyWebInput.
func (g *Random) MyWeb() MyWebInput {
	page := "<html><body><h1>" + g.word(g.r.IntN(40), lower+oddChars) + "</h1></body></html>"
	if g.oneIn(5) {
		page = ""
	}
	return MyWebInput{
		Name:  g.label(30, 4),
		Image: g.image(),
		// The schema takes any port; only the cluster knows its node port
		// range (30000-32767 in the test clusters).
		NodePort: g.int32Of(30000, 32767, 30000, 32767, 0, 65536),
		Page:     page,
		Replicas: g.int32Of(-1, 5, -1, 0, 100),
		Profile:  uint8(g.r.IntN(3)),
	}
}

// MicroServiceDeploy draws a MicroServiceDeployInput.
func (g *Random) MicroServiceDeploy() MicroServiceDeployInput {
	in := MicroServiceDeployInput{
		Name:           g.label(30, 4),
		MsName:         g.label(30, 8),
		Version:        g.word(1, digits) + []string{"", ".0", "." + g.word(1, digits) + "." + g.word(1, digits), "-rc_1", "-beta.2"}[g.r.IntN(5)],
		Path:           g.label(8, 8),
		Image:          g.image(),
		Replicas:       g.int32Of(-1, 6, -1, 0, 1, 1000, 1001),
		Autoscaling:    g.oneIn(2),
		NeedAuth:       g.oneIn(2),
		Idle:           g.oneIn(4),
		Config:         g.word(g.r.IntN(60), lower+digits+oddChars),
		MaxReplicas:    g.int32Of(4, 12, 0, 1, 1000),
		TargetCPU:      g.int32Of(-1, 150, 0, 1, 1000),
		CPUMilli:       g.quantity(4000),
		MemoryMi:       g.quantity(8192),
		MemoryLimMi:    g.quantity(8192),
		Port:           g.int32Of(-1, 65535, 0, 80, 8080, 65536),
		Profile:        uint8(g.r.IntN(3)),
		CreationMillis: g.r.Int64N(2_000_000_000_000) - 100_000_000_000,
		Expose:         uint8(g.r.IntN(3)),
	}
	if g.oneIn(8) {
		in.Version = g.word(1+g.r.IntN(10), lower+oddChars)
	}
	if g.oneIn(3) {
		in.SecretName = g.label(20, 6)
	}
	return in
}
