/*
 * classify.c - the five failure classifiers of rule E12 (their titles
 * are built with core's sb_text, as stack.c's frames are).
 */
#include "errors/classify.h"

#include <string.h>

static bool present(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static void put_str(sb_text *t, const char *s)
{
    sb__text_put(t, s, strlen(s));
}

static void exception_title(const sb_classify_input *in, sb_group_title *g)
{
    char frame[sizeof g->title];
    const char *trace = in->stack_trace != NULL ? in->stack_trace : "";
    int found = sb__stack_first_frame(
        trace, strlen(trace), in->exception_message, frame, sizeof frame);
    sb_text t;
    sb__text_init(&t, g->title, sizeof g->title);
    put_str(&t, in->exception_type);
    put_str(&t, ": ");
    put_str(&t, found ? frame : "No stacktrace");
    g->classifier = SB_CLASSIFIER_EXCEPTION;
}

static void add(sb_group_title *out, size_t *n, const char *classifier,
                const char *title)
{
    if (!present(title))
        return;
    sb_group_title *g = &out[(*n)++];
    sb_text t;
    sb__text_init(&t, g->title, sizeof g->title);
    put_str(&t, title);
    g->classifier = classifier;
}

size_t sb__classify(const sb_classify_input *in,
                    sb_group_title out[SB_CLASSIFIER_COUNT])
{
    size_t n = 0;
    if (in != NULL) {
        if (present(in->exception_type))
            exception_title(in, &out[n++]);
        add(out, &n, SB_CLASSIFIER_MESSAGE_TYPE, in->message_type);
        add(out, &n, SB_CLASSIFIER_ENDPOINT_ADDRESS, in->failed_queue);
        add(out, &n, SB_CLASSIFIER_ENDPOINT_INSTANCE, in->instance_id);
        add(out, &n, SB_CLASSIFIER_ENDPOINT_NAME, in->endpoint_name);
    }
    for (size_t i = n; i < SB_CLASSIFIER_COUNT; i++) {
        out[i].classifier = NULL;
        out[i].title[0] = '\0';
    }
    return n;
}
