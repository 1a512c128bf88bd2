package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/event"
)

// HandlerFunc handles one event. The messages it returns are published by
// handlers registered with a publisher and must be nil otherwise.
type HandlerFunc func(ctx context.Context, e event.Event) ([]*message.Message, error)

// Middleware wraps a HandlerFunc, as Watermill's HandlerMiddleware wraps a
// message handler.
type Middleware func(HandlerFunc) HandlerFunc

// Handler is a function registered for some event kinds under a name. Make
// one with AddNoPublisherHandler, AddHandler or Forward.
type Handler struct {
	name         string
	kinds        []event.Kind
	fn           HandlerFunc
	publishTopic string
	publisher    message.Publisher
	middleware   []Middleware
}

// Name is the handler's name, unique in a pipeline.
func (h *Handler) Name() string { return h.name }

// Kinds are the event kinds the handler takes.
func (h *Handler) Kinds() []event.Kind { return h.kinds }

// AddMiddleware adds middleware to this handler only; the first added runs
// outermost. It returns h, for chaining.
func (h *Handler) AddMiddleware(m ...Middleware) *Handler {
	h.middleware = append(h.middleware, m...)
	return h
}

// chain is the handler's function inside its middleware.
func (h *Handler) chain() HandlerFunc {
	fn := h.fn
	for i := len(h.middleware) - 1; i >= 0; i-- {
		fn = h.middleware[i](fn)
	}
	return fn
}

// AddNoPublisherHandler registers fn for the events of type E; E =
// event.Event takes every kind. It reads like Watermill's
// Router.AddNoPublisherHandler: a name, what it consumes, a function.
func AddNoPublisherHandler[E event.Event](name string, fn func(ctx context.Context, e E) error) *Handler {
	return &Handler{name: name, kinds: kindsOf[E](), fn: func(ctx context.Context, e event.Event) ([]*message.Message, error) {
		return nil, fn(ctx, e.(E))
	}}
}

// AddHandler registers fn for the events of type E and publishes the
// messages it returns to publishTopic on pub (any Watermill publisher),
// like Watermill's Router.AddHandler. A failed publish counts as the
// handler's error: the event is handled again.
func AddHandler[E event.Event](name, publishTopic string, pub message.Publisher, fn func(ctx context.Context, e E) ([]*message.Message, error)) *Handler {
	return &Handler{name: name, kinds: kindsOf[E](), publishTopic: publishTopic, publisher: pub,
		fn: func(ctx context.Context, e event.Event) ([]*message.Message, error) { return fn(ctx, e.(E)) }}
}

// Forward publishes every event of the given kinds (all kinds if none) to
// topic on pub, each marshaled by m (JSONMarshaler{} if nil).
func Forward(name, topic string, pub message.Publisher, m Marshaler, kinds ...event.Kind) *Handler {
	if m == nil {
		m = JSONMarshaler{}
	}
	if len(kinds) == 0 {
		kinds = event.Kinds()
	}
	return &Handler{name: name, kinds: kinds, publishTopic: topic, publisher: pub,
		fn: func(ctx context.Context, e event.Event) ([]*message.Message, error) {
			msg, err := m.Marshal(ctx, e)
			if err != nil {
				return nil, err
			}
			return []*message.Message{msg}, nil
		}}
}

// kindsOf is the kind of the event type E, or every kind for the interface.
func kindsOf[E event.Event]() []event.Kind {
	var zero E
	if any(zero) == nil { // E is an interface type
		return event.Kinds()
	}
	return []event.Kind{zero.Kind()}
}

// Validate checks a set of handlers: each has a name that no other has and
// that reserved does not hold, at least one valid kind and a function, and a
// publish topic exactly when it has a publisher.
func Validate(hs []*Handler, reserved func(name string) bool) error {
	seen := make(map[string]bool, len(hs))
	var errs []error
	for _, h := range hs {
		switch {
		case h == nil:
			errs = append(errs, errors.New("nil event handler"))
			continue
		case h.name == "":
			errs = append(errs, errors.New("event handler without a name"))
		case seen[h.name]:
			errs = append(errs, fmt.Errorf("event handler %q: the name is taken by another handler", h.name))
		case reserved != nil && reserved(h.name):
			errs = append(errs, fmt.Errorf("event handler %q: the name is taken by a built-in handler", h.name))
		}
		seen[h.name] = true
		if h.fn == nil {
			errs = append(errs, fmt.Errorf("event handler %q: no function", h.name))
		}
		if (h.publisher == nil) != (h.publishTopic == "") {
			errs = append(errs, fmt.Errorf("event handler %q: a publisher needs a topic and a topic a publisher", h.name))
		}
		if len(h.kinds) == 0 {
			errs = append(errs, fmt.Errorf("event handler %q: no event kind", h.name))
		}
		for _, k := range h.kinds {
			if !k.Valid() {
				errs = append(errs, fmt.Errorf("event handler %q: unknown event kind %d", h.name, k))
			}
		}
	}
	return errors.Join(errs...)
}
