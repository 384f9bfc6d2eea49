/* headers.c - the header lists of the error store's copies: the failure
 * headers a re-published or edited copy drops (they describe the failure,
 * not the message), and the headers an edit cannot change (E18): identity
 * and correlation, plus every failure header. */
#include "errors/errors.h"

#define FAILURE_HEADERS                                                        \
    "sb-dead-letter-reason", "sb-failed-queue", "sb-time-of-failure",          \
        "sb-processing-endpoint", "sb-host", "sb-attempts",                    \
        "sb-exception-type", "sb-exception-message",                           \
        "sb-exception-stacktrace", "sb-retry-of", "sb-edit-of",                \
        "NServiceBus.FailedQ", "NServiceBus.TimeOfFailure",                    \
        "NServiceBus.ExceptionInfo.ExceptionType",                             \
        "NServiceBus.ExceptionInfo.Message",                                   \
        "NServiceBus.ExceptionInfo.StackTrace",                                \
        "NServiceBus.ExceptionInfo.Source",                                    \
        "NServiceBus.ExceptionInfo.HelpLink",                                  \
        "ServiceControl.Retry.UniqueMessageId", "ServiceControl.EditOf"

static const char *const failure[] = {FAILURE_HEADERS, NULL};

static const char *const locked[] = {"sb-message-id",
                                     "sb-correlation-id",
                                     "sb-conversation-id",
                                     "sb-reply-to",
                                     "NServiceBus.MessageId",
                                     "NServiceBus.CorrelationId",
                                     "NServiceBus.ConversationId",
                                     "NServiceBus.RelatedTo",
                                     "NServiceBus.MessageIntent",
                                     "NServiceBus.ControlMessage",
                                     "NServiceBus.OriginatingSagaId",
                                     "NServiceBus.SagaId",
                                     "NServiceBus.Version",
                                     "NServiceBus.Retries",
                                     "NServiceBus.FLRetries",
                                     "NServiceBus.ProcessingStarted",
                                     "NServiceBus.ProcessingEnded",
                                     FAILURE_HEADERS,
                                     NULL};

const char *const *sb__errors_failure_headers(size_t *n)
{
    if (n != NULL)
        *n = sizeof failure / sizeof failure[0] - 1;
    return failure;
}

const char *const *sb_errors_locked_headers(void)
{
    return locked;
}
