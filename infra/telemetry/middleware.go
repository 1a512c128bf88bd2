package telemetry

import (
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// Attribute keys of checkpointd's own span attributes.
const (
	HandlerKey = attribute.Key("checkpointd.handler")
)

// Middleware traces each Kafka record a handler processes: it extracts the
// W3C trace context the record carries in its headers (message metadata),
// starts a `process <topic>` CONSUMER span as its child, and hands the
// handler a message whose context holds that span, so what the handler
// produces (checkpoints through the Outbox) carries the span's context in
// its headers.
//
// groups maps a handler name to the consumer group its reader uses; handlers
// reading without a group are not in it. Reader control messages
// (envelope.ControlOf) are not records and pass untraced. A nil tp means the
// global provider; prop reads the records' trace context, W3C Trace Context
// when nil.
func Middleware(tp trace.TracerProvider, prop propagation.TextMapPropagator, groups map[string]string) message.HandlerMiddleware {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	tracer := tp.Tracer(messages.TracerScope)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if _, _, _, ok := envelope.ControlOf(msg); ok {
				return h(msg)
			}
			ctx := prop.Extract(msg.Context(), propagation.MapCarrier(msg.Metadata))
			topic := msg.Metadata.Get(envelope.MetaTopic)
			if topic == "" {
				topic = message.SubscribeTopicFromCtx(ctx)
			}
			handler := message.HandlerNameFromCtx(ctx)
			ctx, span := tracer.Start(ctx, "process "+topic, trace.WithSpanKind(trace.SpanKindConsumer))
			defer span.End()
			// Attributes only for a span that records: a trace that is not
			// sampled then costs little more than the span start.
			if span.IsRecording() {
				span.SetAttributes(recordAttributes(msg, topic, handler, groups[handler])...)
			}
			orig := msg.Context()
			msg.SetContext(ctx)
			out, err := h(msg)
			msg.SetContext(orig)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(semconv.ErrorTypeKey.String("handler_error"))
			}
			return out, err
		}
	}
}

// recordAttributes are the semantic-convention attributes of a `process`
// span for msg.
func recordAttributes(msg *message.Message, topic, handler, group string) []attribute.KeyValue {
	// Sized for every attribute below: one allocation per record.
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationName(topic),
		semconv.MessagingMessageBodySize(len(msg.Payload)),
		HandlerKey.String(handler),
	)
	if p := msg.Metadata.Get(envelope.MetaPartition); p != "" {
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(p))
	}
	if o, err := strconv.ParseInt(msg.Metadata.Get(envelope.MetaOffset), 10, 64); err == nil {
		attrs = append(attrs, semconv.MessagingKafkaOffset(int(o)))
	}
	if group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
	}
	if msg.Metadata.Get(envelope.MetaTombstone) == "true" {
		attrs = append(attrs, semconv.MessagingKafkaMessageTombstone(true))
	}
	// A message of several records (envelope.FromRecords): the offset above
	// is the first one's.
	if n, err := strconv.Atoi(msg.Metadata.Get(envelope.MetaRecords)); err == nil {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
	}
	return attrs
}
