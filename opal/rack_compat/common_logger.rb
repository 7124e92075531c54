# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/common_logger'

# Rack::CommonLogger#log escapes unprintable characters with gsub! and a POSIX class, then
# sets msg[-1]; Opal strings are immutable and JS regexps have no [:print:]. This builds the
# same line: C0/C1 control characters (what [:print:] excludes) become \xNN.
module Rack
  class CommonLogger
    NON_PRINTABLE = /[\u0000-\u001f\u007f-\u009f]/

    private

    def log(env, status, response_headers, began_at)
      request = Rack::Request.new(env)
      length = extract_content_length(response_headers)

      msg = sprintf(FORMAT,
        request.ip || "-",
        request.get_header("REMOTE_USER") || "-",
        Time.now.strftime("%d/%b/%Y:%H:%M:%S %z"),
        request.request_method,
        request.script_name,
        request.path_info,
        request.query_string.empty? ? "" : "?#{request.query_string}",
        request.get_header(SERVER_PROTOCOL),
        status.to_s[0..3],
        length,
        Utils.clock_time - began_at)

      msg = msg.gsub(NON_PRINTABLE) { |c| sprintf("\\x%x", c.ord) }
      msg = "#{msg[0..-2]}\n"

      logger = @logger || request.get_header(RACK_ERRORS)
      if logger.respond_to?(:write)
        logger.write(msg)
      else
        logger << msg
      end
    end
  end
end
