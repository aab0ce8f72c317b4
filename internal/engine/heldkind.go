package engine

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// HeldKind holds the controllers built for one kind until the first
// resource of the kind exists: a controller starts an informer for every
// type it watches, and a kind no resource uses would otherwise keep
// informers, workers and their memory for children that never exist.
//
// The controllers are built with the heldKind as their manager; its Add
// keeps them instead of running them, and run hands them to the manager
// once the kind's informer shows a resource. The kind's own informer
// runs from the start: it tells when the first resource appears.
type HeldKind struct {
	ctrl.Manager
	resource client.Object
	// pruned are indexed by controller before the controllers run.
	pruned []client.Object
	index  *ChildIndex
	held   []manager.Runnable
}

func NewHeldKind(mgr ctrl.Manager, resource client.Object, pruned []client.Object, index *ChildIndex) *HeldKind {
	return &HeldKind{Manager: mgr, resource: resource, pruned: pruned, index: index}
}

// Add keeps r until the kind's first resource.
func (h *HeldKind) Add(r manager.Runnable) error {
	h.held = append(h.held, r)
	return nil
}

// Run is a runnable of the manager: it waits for the kind's first
// resource, registers the index the controllers prune with and starts
// them.
func (h *HeldKind) Run(ctx context.Context) error {
	informer, err := h.GetCache().GetInformer(ctx, h.resource)
	if err != nil {
		return fmt.Errorf("informer of %T: %w", h.resource, err)
	}
	first := make(chan struct{})
	var once sync.Once
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { once.Do(func() { close(first) }) },
	})
	if err != nil {
		return err
	}
	select {
	case <-first:
	case <-ctx.Done():
		return nil
	}
	if err := informer.RemoveEventHandler(reg); err != nil {
		return err
	}
	if err := h.index.Register(ctx, h.pruned); err != nil {
		return err
	}
	for _, r := range h.held {
		if err := h.Manager.Add(r); err != nil {
			return err
		}
	}
	return nil
}

// ChildIndex registers controllerUIDField on each type at most once, for
// every kind that prunes it.
type ChildIndex struct {
	indexer client.FieldIndexer
	mu      sync.Mutex
	done    map[reflect.Type]bool
}

func NewChildIndex(indexer client.FieldIndexer) *ChildIndex {
	return &ChildIndex{indexer: indexer, done: map[reflect.Type]bool{}}
}

func (x *ChildIndex) Register(ctx context.Context, types []client.Object) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range types {
		t := reflect.TypeOf(o)
		if x.done[t] {
			continue
		}
		if err := x.indexer.IndexField(ctx, o, ControllerUIDField, controllerUID); err != nil {
			return fmt.Errorf("index %T by controller: %w", o, err)
		}
		x.done[t] = true
	}
	return nil
}
