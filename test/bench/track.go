package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// tracker watches the resources of one kind and stamps two moments for
// each: when it converged, that is its status.observedGeneration reached
// its generation (at least minGeneration; the operator moves it only after
// a pass that applied every child), and when it turned Ready for that
// generation, which also waits for the cluster (the Deployment controller
// reporting the rollout).
type tracker struct {
	mu            sync.Mutex
	minGeneration int64
	at            map[string]time.Time
	ready         map[string]time.Time
	informer      toolscache.SharedIndexInformer
	// stop ends the watch; call it before the cluster stops, or the
	// informer keeps retrying a server that is gone.
	stop context.CancelFunc
}

func newTracker(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource) (*tracker, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	t := &tracker{minGeneration: 1, at: map[string]time.Time{}, ready: map[string]time.Time{}, informer: f.ForResource(gvr).Informer(), stop: stop}
	handle := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			t.observe(u)
		}
	}
	if _, err := t.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		stop()
		return nil, err
	}
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), t.informer.HasSynced) {
		stop()
		return nil, ctx.Err()
	}
	return t, nil
}

func (t *tracker) observe(u *unstructured.Unstructured) {
	now := time.Now()
	key := u.GetNamespace() + "/" + u.GetName()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !converged(u, t.minGeneration) {
		return
	}
	if _, ok := t.at[key]; !ok {
		t.at[key] = now
	}
	if _, ok := t.ready[key]; !ok && ready(u) {
		t.ready[key] = now
	}
}

func converged(u *unstructured.Unstructured, minGeneration int64) bool {
	gen := u.GetGeneration()
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return gen >= minGeneration && og == gen
}

// ready reports whether the Ready condition is True for the generation.
func ready(u *unstructured.Unstructured) bool {
	gen := u.GetGeneration()
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			cg, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			return m["status"] == "True" && cg == gen
		}
	}
	return false
}

// reset forgets every stamp and waits for resources of at least generation
// minGeneration from now on.
func (t *tracker) reset(minGeneration int64) {
	t.mu.Lock()
	t.minGeneration = minGeneration
	t.at = map[string]time.Time{}
	t.ready = map[string]time.Time{}
	t.mu.Unlock()
	for _, o := range t.informer.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			t.observe(u)
		}
	}
}

// count returns how many resources in namespaces starting with prefix have
// converged, and when the last of them did.
func (t *tracker) count(prefix string) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return countIn(t.at, prefix)
}

// first returns when the first resource in namespaces starting with
// prefix converged; zero when none has.
func (t *tracker) first(prefix string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first time.Time
	for k, at := range t.at {
		if strings.HasPrefix(k, prefix) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// countReady is count for the Ready stamps.
func (t *tracker) countReady(prefix string) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return countIn(t.ready, prefix)
}

func countIn(stamps map[string]time.Time, prefix string) (int, time.Time) {
	n, last := 0, time.Time{}
	for k, at := range stamps {
		if strings.HasPrefix(k, prefix) {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

func (t *tracker) when(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.at[key]
	return at, ok
}

func (t *tracker) whenReady(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.ready[key]
	return at, ok
}

// operatorUser is the user the operator and the bare client authenticate as.
const operatorUser = "system:serviceaccount:" + operatorNamespace + ":" + operatorServiceAccount

// auditPolicy logs, at Metadata level, every mutating request of the
// operator's ServiceAccount (the operator and the bare client), and of
// anyone in the probe's namespace (the Deployment controller's report on
// a probe's Deployment), and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + operatorUser + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
  namespaces: ["` + probeNamespace + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// auditEvent is what the benchmark reads of an audit event.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// probeTimeline is when the steps of a probe's way to its status
// completed, in seconds from its creation: the operator's first write of
// a child, and the Deployment controller's first report on the probe's
// Deployment (0 when the log holds none).
type probeTimeline struct {
	ChildWrittenSeconds       float64 `json:"childWrittenSeconds"`
	DeploymentObservedSeconds float64 `json:"deploymentObservedSeconds"`
}

// probe reads the whole log for the probe called name, created at created.
func (a *auditLog) probe(name string, created time.Time) (probeTimeline, error) {
	var t probeTimeline
	since := func(at metav1.MicroTime) float64 { return at.Sub(created).Seconds() }
	_, err := a.read(0, func(ev auditEvent) {
		ref := ev.ObjectRef
		if ref.Namespace != probeNamespace || ref.Name != name {
			return
		}
		switch {
		case ev.User.Username == operatorUser && ref.Subresource == "" && ref.Resource != "events" && t.ChildWrittenSeconds == 0:
			t.ChildWrittenSeconds = since(ev.StageTimestamp)
		case ev.User.Username != operatorUser && ref.Resource == "deployments" && ref.Subresource == "status" && t.DeploymentObservedSeconds == 0:
			t.DeploymentObservedSeconds = since(ev.StageTimestamp)
		}
	})
	return t, err
}

// auditLog reads the API server's audit log from where it was last read.
type auditLog struct {
	path   string
	offset int64
	// lastChild is when the last write to a child (any resource but a
	// status or an Event) read by since completed.
	lastChild time.Time
}

// auditCounts are mutating requests by "verb resource[/subresource]",
// in namespaces starting with the prefix they were read for.
type auditCounts map[string]int

func (a auditCounts) total() int {
	n := 0
	for _, v := range a {
		n += v
	}
	return n
}

// without returns the total without the requests on the named resource.
func (a auditCounts) without(resource string) int {
	n := 0
	for k, v := range a {
		if !strings.HasSuffix(k, " "+resource) {
			n += v
		}
	}
	return n
}

// mark skips what the log holds so far.
func (a *auditLog) mark() {
	if fi, err := os.Stat(a.path); err == nil {
		a.offset = fi.Size()
	}
}

// since counts the requests logged since the last mark, in namespaces
// starting with prefix ("" for every request), and marks.
func (a *auditLog) since(prefix string) (auditCounts, error) {
	counts := auditCounts{}
	a.lastChild = time.Time{}
	read, err := a.read(a.offset, func(ev auditEvent) {
		// A review (the start-up permission check's
		// SelfSubjectRulesReview) is a create that stores nothing.
		if ev.User.Username != operatorUser || !strings.HasPrefix(ev.ObjectRef.Namespace, prefix) || strings.HasSuffix(ev.ObjectRef.Resource, "reviews") {
			return
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		counts[ev.Verb+" "+res]++
		if ev.ObjectRef.Subresource == "" && res != "events" && ev.StageTimestamp.After(a.lastChild) {
			a.lastChild = ev.StageTimestamp.Time
		}
	})
	if err != nil {
		return nil, err
	}
	a.offset = read
	return counts, nil
}

// read hands each event the log holds from offset on to each, and returns
// the offset after the last whole line.
func (a *auditLog) read(offset int64, each func(auditEvent)) (int64, error) {
	// The log is written as requests complete: give the last ones a moment.
	time.Sleep(time.Second)
	f, err := os.Open(a.path)
	if err != nil {
		return offset, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return offset, nil // a partial last line is read next time
		}
		offset += int64(len(line))
		var ev auditEvent
		if json.Unmarshal(line, &ev) == nil {
			each(ev)
		}
	}
}
