// Package serve is tokenmix's HTTP model server, behind `tokenmix serve`:
// JSON endpoints over net/http for the models of the root package's API,
// with dynamic batching, streamed generation, limits that hold under
// abuse, Prometheus metrics and graceful shutdown.
//
// Endpoints (every error is {"error": {"message", "type"}} with a 4xx or
// 5xx status; an unknown or unsupported request field is a 400 naming it):
//
//	POST /v1/classify     {"model", "inputs": [text…] | "tokens": [[id…]…]} → {"model", "results": [Prediction…]}
//	POST /v1/score        the same inputs, for a causal lm → {"model", "results": [Score…]}
//	POST /v1/completions  the OpenAI completions subset: model, prompt, max_tokens,
//	                      temperature, top_p, stop, seed, stream, logprobs (0 or 1)
//	GET  /v1/models       the models served
//	GET  /healthz         live; GET /readyz: models loaded and not draining
//	GET  /metrics         Prometheus metrics
//
// Batching. Each model has one batcher goroutine for classify or score
// (whichever its task allows): the first request opens a window
// (Config.BatchWindow, 2 ms by default) during which further requests
// join, up to Config.MaxBatch sequences; the batch is one call of the API,
// and each request gets its own results, equal to those of the request
// served alone within the API's 1e-6. Each causal lm has one scheduler
// goroutine for completions: every active generation (at most
// Config.MaxStreams) draws its next token and all of them step through one
// tokenmix.StepGenerations, so sampled tokens equal a direct Generate's
// with the same prompt, options and seed.
//
// Limits. Request bodies, inputs per request, tokens per input and
// max_tokens are capped (413 or 400 naming the cap). Each model admits at
// most Config.Queue requests at a time, waiting or running; one more gets
// 429 with Retry-After. A request runs for at most Config.Timeout, and a
// client that goes away cancels its work (a generation stops at the next
// token). The http.Server has read-header, read, write and idle timeouts
// and a header-size limit; streamed completions extend the write deadline
// per event. With a bearer token (Config.Token) every endpoint but the
// health checks needs it; without one, only a loopback address may be
// served unless Config.InsecureBind. Every response carries X-Request-Id,
// and every request gets one access-log line.
//
// Shutdown. Shutdown stops admitting (new requests get 503, /readyz
// turns 503), lets in-flight requests, streams included, finish until its
// context's deadline, then cancels what is left and stops every goroutine
// it started.
package serve
