#include "report.h"

#include <sys/resource.h>

double wsl_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A JSON string (RFC 8259 §7): quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

void wsl_report_begin(FILE *out, const char *mode, const wsl_run_t *run)
{
    fprintf(out, "{\"mode\":\"%s\",\"requested\":%u,\"connections\":%u,\"opened\":%u,\"size\":%u,",
            mode, run->opt->requested, run->count, run->opened, run->opt->size);
}

void wsl_report_latency(FILE *out, const char *name, const wsl_histogram_t *h)
{
    fprintf(out, "\"%s_p50_us\":%.1f,\"%s_p99_us\":%.1f,\"%s_max_us\":%.1f,", name,
            (double)wsl_histogram_percentile(h, 0.50) / 1e3, name,
            (double)wsl_histogram_percentile(h, 0.99) / 1e3, name, (double)h->max / 1e3);
}

void wsl_report_end(FILE *out, const wsl_run_t *run, uint64_t ops)
{
    fputs("\"errors\":{", out);
    for (int k = 0; k < WSL_ERR_COUNT; k++)
        fprintf(out, "%s\"%s\":%llu", k ? "," : "", wsl_error_name((wsl_error_t)k),
                (unsigned long long)run->errors[k]);
    fputs("},\"first_error\":", out);
    json_string(out, run->first_error);
    double cpu = wsl_cpu_seconds();
    fprintf(out, ",\"wall_s\":%.3f,\"cpu_s\":%.3f,\"cpu_us_per_op\":%.3f}\n",
            (double)(wsl_now() - run->started) / 1e9, cpu, ops ? cpu * 1e6 / (double)ops : 0.0);
    fflush(out);
}
