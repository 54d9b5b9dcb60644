//! [`endpoint!`]: a route's path written once. `endpoint!("api" / "v1" / "events" /
//! {eventId: String} / "link")` is the path filter (literal segments, typed parameters,
//! nothing after the last segment) and names the request for the metrics and the access log
//! with the same path: `/api/v1/events/:eventId/link`.

/// The path filter of a route and its pattern label (see the module documentation).
macro_rules! endpoint {
    ($first:tt $(/ $rest:tt)*) => {
        $crate::http::endpoint::segment!($first)
            $( .and($crate::http::endpoint::segment!($rest)) )*
            .and(::warp::path::end())
            .and($crate::http::extract::route(concat!(
                "/", $crate::http::endpoint::label!($first)
                $( , "/", $crate::http::endpoint::label!($rest) )*
            )))
    };
}

/// One segment's filter: a literal, or a typed parameter.
macro_rules! segment {
    ($literal:literal) => {
        ::warp::path($literal)
    };
    ({ $name:ident : $ty:ty }) => {
        ::warp::path::param::<$ty>()
    };
}

/// One segment's label: the literal, or `:name` for a parameter.
macro_rules! label {
    ($literal:literal) => {
        $literal
    };
    ({ $name:ident : $ty:ty }) => {
        concat!(":", stringify!($name))
    };
}

pub(crate) use {endpoint, label, segment};
