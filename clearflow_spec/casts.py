"""Spark's casts from text, in plain Python (no pyspark), for `clearflow_spec.conversion`.

Ported from Spark 4 (`UTF8String.toLongExact`, `Cast` with `try_cast`, `SparkDateTimeUtils.stringToDate` and
`parseTimestampString`/`stringToTimestamp`, `ZoneId.of` with SHORT_IDS) and Java (`Double.parseDouble`,
`Double.toString`, `new BigDecimal(String)`). `tests/spark_jobs/test_conversion_parity.py` holds them to Spark.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from functools import lru_cache
from typing import Any

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_JAVA_DOUBLE_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+))[fFdD]?"
)
# Java's BigDecimal reads any Unicode decimal digit (Character.digit), as Python's Decimal does.
_JAVA_DECIMAL_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def java_double(value: float) -> str:
    """`Double.toString`: plain between 1e-3 and 1e7, else `d.dddE±n` (Python's shortest digits; Java 17
    prints a few subnormals with other digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    number = Decimal(repr(abs(value)))
    digits = "".join(map(str, number.as_tuple().digits)).rstrip("0") or "0"
    exponent = number.adjusted()
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = (digits + "0" * point)[:point], digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def java_decimal(text: str) -> Decimal | None:
    """`new BigDecimal(text.trim())` as Spark's `Decimal.fromString` reads it (None: not a number, or more
    than 38 digits before the point)."""
    body = java_trim(text)
    if not _JAVA_DECIMAL_RE.fullmatch(body):
        return None
    number = Decimal(body)
    return None if number.adjusted() + 1 > 38 else number


def fits_decimal(number: Decimal, precision: int, scale: int) -> bool:
    """Whether Spark's `changePrecision` (HALF_UP) fits the number into decimal(precision, scale)."""
    if not number.is_finite():
        return False
    with localcontext() as context:
        context.prec = 200
        try:
            rounded = number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        except InvalidOperation:
            return False
        return abs(rounded) < Decimal(10) ** (precision - scale)


# --- text -> number, date, timestamp ----------------------------------------------------------------------------------


def spark_trim(text: str) -> str:
    """UTF8String's trim of whitespace and ISO control characters (code points 0-32 and 127)."""
    return text.strip("".join(chr(c) for c in range(33)) + "\x7f")


def java_trim(text: str) -> str:
    return text.strip("".join(chr(c) for c in range(33)))


def to_long_exact(text: str) -> int | None:
    """`try_cast(text AS bigint)`: optional sign and ASCII digits only, within 64 bits."""
    body = spark_trim(text)
    if not re.fullmatch(r"[+-]?[0-9]+", body):
        return None
    number = int(body)
    return number if LONG_MIN <= number <= LONG_MAX else None


def to_double(text: str) -> float | None:
    """`try_cast(text AS double)` (legacy): Java's `Double.parseDouble`, then Spark's special literals."""
    body = java_trim(text)
    match = _JAVA_DOUBLE_RE.fullmatch(body)
    if match:
        negative = body.startswith("-")
        if match.group("hex"):
            magnitude = float.fromhex(match.group("hex"))
        elif match.group("dec"):
            magnitude = float(match.group("dec"))
        else:
            magnitude = math.nan if "NaN" in body else math.inf
        return -magnitude if negative else magnitude
    special = body.lower()
    if special in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if special in ("-inf", "-infinity"):
        return -math.inf
    if special == "nan":
        return math.nan
    return None


def to_bool(text: str) -> bool | None:
    lowered = text.strip(" ").lower()
    return True if lowered == "true" else False if lowered == "false" else None


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (any year)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _valid_date(year: int, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)


def to_date(text: str) -> int | None:
    """`try_cast(text AS date)`: Spark's `stringToDate` (days since the epoch)."""
    data = text.encode()
    start, end = _trimmed_bounds(data)
    if start == end:
        return None
    segments, sign, i, value, digits, j = [1, 1, 1], 1, 0, 0, 0, start

    def valid(segment: int, count: int) -> bool:
        return (segment == 0 and 4 <= count <= 7) or (segment != 0 and 0 < count <= 2)

    if data[j] in b"-+":
        sign = -1 if data[j] == ord("-") else 1
        j += 1
    while j < end and i < 3 and data[j] not in b" T":
        b = data[j]
        if i < 2 and b == ord("-"):
            if not valid(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif 48 <= b <= 57:
            value, digits = value * 10 + b - 48, digits + 1
        else:
            return None
        j += 1
    if not valid(i, digits) or (i < 2 and j < end):
        return None
    segments[i] = value
    year, month, day = sign * segments[0], segments[1], segments[2]
    return _days_from_civil(year, month, day) if _valid_date(year, month, day) else None


def _trimmed_bounds(data: bytes) -> tuple[int, int]:
    start, end = 0, len(data) - 1
    while start < len(data) and (data[start] <= 32 or data[start] == 127):
        start += 1
    while end > start and (data[end] <= 32 or data[end] == 127):
        end -= 1
    return start, end + 1


def parse_timestamp(text: str) -> int | None:
    """`try_cast(text AS timestamp)` in UTC: Spark's `parseTimestampString` + `stringToTimestamp`
    (microseconds since the epoch; a time alone is today's)."""
    data = text.encode()
    start, end = _trimmed_bounds(data)
    if start == end:
        return None
    seg = [1, 1, 1, 0, 0, 0, 0, 0, 0]
    i = value = digits = digits_milli = 0
    just_time, year_sign, tz, j = False, None, None, start

    def valid(segment: int, count: int) -> bool:
        return (
            segment == 6
            or (segment == 0 and 4 <= count <= 6)
            or (segment == 7 and count <= 2)
            or (segment not in (0, 6, 7) and 0 < count <= 2)
        )

    if data[j] in b"-+":
        year_sign = -1 if data[j] == ord("-") else 1
        j += 1
    while j < end:
        b = data[j]
        if not 48 <= b <= 57:
            if j == 0 and b == ord("T"):
                just_time, i = True, i + 3
            elif i < 2:
                if b == ord("-"):
                    if not valid(i, digits):
                        return None
                    seg[i], value, digits, i = value, 0, 0, i + 1
                elif i == 0 and b == ord(":") and year_sign is None:
                    if not valid(3, digits):
                        return None
                    just_time, seg[3], value, digits, i = True, value, 0, 0, 4
                else:
                    return None
            elif i == 2:
                if b not in b" T" or not valid(i, digits):
                    return None
                seg[i], value, digits, i = value, 0, 0, i + 1
            elif i in (3, 4):
                if b != ord(":") or not valid(i, digits):
                    return None
                seg[i], value, digits, i = value, 0, 0, i + 1
            elif i in (5, 6):
                if not valid(i, digits):
                    return None
                seg[i], value, digits, i = value, 0, 0, i + 1
                if not (b == ord(".") and i == 6):
                    tz = data[j:end].decode(errors="replace")
                    j = end - 1
                if i == 6 and b != ord("."):
                    i += 1
            else:
                if i < len(seg) and b in b": ":
                    if not valid(i, digits):
                        return None
                    seg[i], value, digits, i = value, 0, 0, i + 1
                else:
                    return None
        else:
            if i == 6:
                digits_milli += 1
            if i != 6 or digits < 6:
                value = value * 10 + b - 48
            digits += 1
        j += 1
    if not valid(i, digits):
        return None
    seg[i] = value
    seg[6] *= 10 ** max(0, 6 - digits_milli)
    zone: Any = 0
    if tz is not None:
        zone = _zone(java_trim(tz))
        if zone is None:
            return None
    if not (seg[3] <= 23 and seg[4] <= 59 and seg[5] <= 59):
        return None
    year, month, day = seg[0] * (year_sign or 1), seg[1], seg[2]
    if just_time:
        year, month, day = _today(zone)
    if not _valid_date(year, month, day):
        return None
    local = _days_from_civil(year, month, day) * 86400 + seg[3] * 3600 + seg[4] * 60 + seg[5]
    micros = (local - _offset_at(zone, local)) * 1_000_000 + seg[6]
    return micros if LONG_MIN <= micros <= LONG_MAX else None


def _today(zone: Any) -> tuple[int, int, int]:
    from datetime import UTC, datetime, timedelta, timezone

    now = datetime.now(UTC)
    today = now.astimezone(zone) if not isinstance(zone, int) else now.astimezone(timezone(timedelta(seconds=zone)))
    return today.year, today.month, today.day


def _offset_at(zone: Any, local_seconds: int) -> int:
    """Seconds east of UTC at a local time (java.time: a time in a gap moves forward, an overlap takes the
    earlier offset, as Python's fold=0 does). Outside years 1-9999 a region's offset does not matter here."""
    if isinstance(zone, int):
        return zone
    from datetime import datetime, timedelta

    try:
        local = datetime(1970, 1, 1) + timedelta(seconds=local_seconds)
    except OverflowError:
        return 0
    offset = local.replace(tzinfo=zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


# java.time.ZoneId.SHORT_IDS, which Spark passes to ZoneId.of.
_SHORT_IDS = {
    "EST": "-05:00", "HST": "-10:00", "MST": "-07:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}  # fmt: skip


def _zone(zone: str) -> Any:
    """A fixed offset (seconds east of UTC) or a `ZoneInfo` for a zone Spark accepts; None when
    `ZoneId.of` would refuse it."""
    zone = re.sub(r"([+-])(\d):", r"\g<1>0\2:", zone, count=1)
    zone = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", zone, count=1)
    zone = _SHORT_IDS.get(zone, zone)
    if len(zone) <= 1 or zone[0] in "+-":
        return _offset_of(zone)
    for prefix in ("UTC", "GMT", "UT"):
        if zone.startswith(prefix):
            rest = zone[len(prefix) :]
            if not rest:
                return 0
            if rest[0] in "+-":
                return _offset_of(rest)
            break
    if not _region_exists(zone):
        return None
    import zoneinfo

    return zoneinfo.ZoneInfo(zone)


def _offset_of(text: str) -> int | None:
    """`ZoneOffset.of`: Z, ±h, ±hh, ±hhmm, ±hh:mm, ±hhmmss, ±hh:mm:ss, at most ±18:00."""
    if text == "Z":
        return 0
    match = re.fullmatch(r"([+-])([0-9]{1,2})(?:(:?)([0-9]{2})(?:\3([0-9]{2}))?)?", text)
    if not match or (len(match.group(2)) == 1 and match.group(4)):
        return None
    hours, minutes, seconds = int(match.group(2)), int(match.group(4) or 0), int(match.group(5) or 0)
    if hours > 18 or minutes > 59 or seconds > 59 or (hours == 18 and (minutes or seconds)):
        return None
    total = hours * 3600 + minutes * 60 + seconds
    return -total if match.group(1) == "-" else total


@lru_cache(maxsize=1)
def _regions() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def _region_exists(zone: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9~/._+-]+", zone)) and zone in _regions()


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, proleptic Gregorian, any year."""
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def timestamp_text(micros: int, *, iso: bool = False) -> str:
    """A UTC timestamp as Spark prints it: `cast(ts AS string)`, or (`iso`) the sink's
    `date_format(ts, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")`. Years past 9999 get a '+'."""
    seconds, fraction = divmod(micros, 1_000_000)
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    shown = f"+{year}" if year > 9999 else f"-{-year:04d}" if year < 0 else f"{year:04d}"
    clock = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    if iso:
        return f"{shown}-{month:02d}-{day:02d}T{clock}.{fraction:06d}Z"
    text = f"{shown}-{month:02d}-{day:02d} {clock}"
    return f"{text}.{fraction:06d}".rstrip("0") if fraction else text
