# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/request'

# Rack::Request::Helpers methods that mutate strings (Opal strings are immutable JS
# strings), rewritten to build new strings. Same results as Rack 3.2.8's versions.
module Rack
  class Request
    module Helpers
      # Rack: form_vars.slice!(-1) to drop the "\0" Safari appends to Ajax posts.
      def form_pairs
        if (pairs = get_header(RACK_REQUEST_FORM_PAIRS))
          return pairs
        elsif (error = get_header(RACK_REQUEST_FORM_ERROR))
          raise error.class, error.message, cause: error.cause
        end

        begin
          rack_input = get_header(RACK_INPUT)

          if rack_input.nil?
            set_header(RACK_REQUEST_FORM_PAIRS, [])
          elsif form_data? || parseable_data?
            if (pairs = Rack::Multipart.parse_multipart(env, Rack::Multipart::ParamList))
              set_header RACK_REQUEST_FORM_PAIRS, pairs
            else
              form_vars = get_header(RACK_INPUT).read(query_parser.bytesize_limit + 2) || ''
              form_vars = form_vars[0..-2] if form_vars.end_with?("\0")

              set_header RACK_REQUEST_FORM_VARS, form_vars
              pairs = query_parser.parse_query_pairs(form_vars, '&')
              set_header(RACK_REQUEST_FORM_PAIRS, pairs)
            end
          else
            set_header(RACK_REQUEST_FORM_PAIRS, [])
          end
        rescue => error
          set_header(RACK_REQUEST_FORM_ERROR, error)
          raise
        end
      end

      private

      # Rack: part.strip!, attribute.strip!, parameters&.strip!.
      def parse_http_accept_header(header)
        parts = header.to_s.split(',').map do |part|
          part = part.strip
          next if part.empty?

          attribute, parameters = part.split(';', 2)
          attribute = attribute.strip
          parameters = parameters&.strip
          quality = 1.0
          if parameters && /\Aq=([\d.]+)/ =~ parameters
            quality = $1.to_f
          end
          [attribute, quality]
        end
        parts.compact
      end
    end
  end
end
