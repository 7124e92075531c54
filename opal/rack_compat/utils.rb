# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/utils'

# Rack::Utils methods that mutate strings (Opal strings are immutable JS strings), rewritten
# to build new strings instead. Same inputs, same results as Rack 3.2.8's versions; every
# other Rack::Utils method is Rack's own.
module Rack
  module Utils
    # Rack: header.slice!/sub!/strip!, value <<. Here the rest of the header is reassigned.
    def forwarded_values(forwarded_header)
      return unless forwarded_header

      header = forwarded_header.to_s.tr("\n", ";").sub(/\A[\s;,]+/, '')
      num_params = num_escapes = 0
      max_params = max_escapes = 1024
      params = {}

      while (i = header.index('='))
        num_params += 1
        return if num_params > max_params

        param = header[0, i + 1]
        header = header[(i + 1)..]
        param = param.chomp('=').strip.downcase
        return unless (param = ALLOWED_FORWARDED_PARAMS[param])

        if header[0] == '"'
          header = header[1..]
          value = ''

          while (i = header.index(/(["\\])/))
            c = $1
            value += header[0, i]
            header = header[(i + 1)..]
            break if c == '"'

            num_escapes += 1
            return if num_escapes > max_escapes

            value += header[0, 1]
            header = header[1..] || ''
          end
        else
          if (i = header.index(/[;,]/))
            value = header[0, i].sub(/[\s;,]+\z/, '')
            header = header[i..]
          else
            value = header.strip
            header = ''
          end
          value = value.lstrip
        end

        (params[param] ||= []) << value
        header = header.sub(/\A[\s;,]+/, '') unless header.empty?
      end

      params
    end
    module_function :forwarded_values

    # Rack: clean_path.prepend("/").
    def clean_path_info(path_info)
      parts = path_info.split PATH_SEPS
      clean = []

      parts.each do |part|
        next if part.empty? || part == '.'

        part == '..' ? clean.pop : clean << part
      end

      clean_path = clean.join(::File::SEPARATOR)
      clean_path = "/#{clean_path}" if parts.empty? || parts.first.empty?
      clean_path
    end
    module_function :clean_path_info
  end
end
