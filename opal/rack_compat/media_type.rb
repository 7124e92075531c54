# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/media_type'

# Rack::MediaType.type and .params call rstrip!/downcase!/strip! on the pieces of the
# header; Opal strings are immutable, so these build new strings. Same results.
module Rack
  class MediaType
    class << self
      def type(content_type)
        return nil unless content_type && !content_type.empty?

        content_type.split(SPLIT_PATTERN, 2).first.rstrip.downcase
      end

      def params(content_type)
        return {} if content_type.nil? || content_type.empty?

        content_type.split(SPLIT_PATTERN)[1..-1].each_with_object({}) do |s, hsh|
          k, v = s.strip.split('=', 2)
          hsh[k.downcase] = strip_doublequotes(v)
        end
      end
    end
  end
end
